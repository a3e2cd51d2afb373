// train.target: jobset: a JobSet (jobset.x-k8s.io) of one replicated Indexed Job, one
// pod per node. JobSet makes the headless Service and the pods' host names
// (<run>-node-0-<rank>.<run>); retries are the JobSet's restarts of the whole set.

#include <string>
#include <vector>

#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

std::vector<ordered_json> render_jobset(const detail::RenderContext& ctx, const std::string& run,
                                        const std::string& sweep,
                                        const project::SweepPoint& point) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  const bool volcano = p.scheduling.gang == "volcano";
  const ordered_json labels = detail::common_labels(p, run, sweep);
  std::vector<ordered_json> out;
  if (volcano) out.push_back(detail::render_podgroup(ctx, run, labels));

  ordered_json js = ctx.load("jobset.yaml");
  const bool queued = detail::is_queued(ctx, run, point);
  detail::set_run_metadata(ctx, js, run, labels, point, queued);
  auto& spec = js["spec"];
  if (queued) spec["suspend"] = true;
  if (t.ttl_s) spec["ttlSecondsAfterFinished"] = *t.ttl_s;
  // Another controller (MultiKueue) runs the set: a field of the JobSet, not of a Job.
  if (!p.scheduling.managed_by.empty()) spec["managedBy"] = p.scheduling.managed_by;
  spec["network"] = {{"enableDNSHostnames", true}, {"publishNotReadyAddresses", true}};
  spec["failurePolicy"] = {{"maxRestarts", t.restarts}};

  // The replicated Job: the Job skeleton's spec (its pod failure policy included).
  ordered_json job_spec = ctx.load("job.yaml")["spec"];
  job_spec["completionMode"] = "Indexed";
  job_spec["completions"] = t.nodes;
  job_spec["parallelism"] = t.nodes;
  job_spec["backoffLimit"] = 0;  // a failed node restarts the set (failurePolicy)
  if (t.deadline_s) job_spec["activeDeadlineSeconds"] = *t.deadline_s;
  job_spec.erase("ttlSecondsAfterFinished");
  detail::set_job_policies(ctx, job_spec);
  detail::TrainPodWiring w;
  w.master_addr = run + "-node-0-0." + run;
  w.rank_env.push_back(detail::env_from_field(
      "JOB_COMPLETION_INDEX", "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  // A pod failure the rules call fatal (FailJob) fails the set: without this rule, the
  // JobSet would restart it as it restarts any failed Job.
  bool fails = false;
  if (job_spec.contains("podFailurePolicy") && job_spec["podFailurePolicy"].contains("rules")) {
    for (const auto& r : job_spec["podFailurePolicy"]["rules"]) {
      fails = fails || r.value("action", "") == "FailJob";
    }
  }
  if (fails) {
    spec["failurePolicy"]["rules"] =
        ordered_json::array({{{"name", "PodFailurePolicyFailJob"},
                              {"action", "FailJobSet"},
                              {"onJobFailureReasons", {"PodFailurePolicy"}}}});
  }
  job_spec["template"] = detail::train_pod_template(ctx, run, labels, point, w);
  spec["replicatedJobs"] = ordered_json::array(
      {{{"name", "node"},
        {"replicas", 1},
        {"template", {{"metadata", {{"labels", labels}}}, {"spec", std::move(job_spec)}}}}});
  out.push_back(std::move(js));
  return out;
}

}  // namespace

extern const TrainTarget kJobSet = {
    "jobset",
    {"jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", "jobsets.jobset.x-k8s.io",
     "install JobSet: kubectl apply --server-side -f "
     "https://github.com/kubernetes-sigs/jobset/releases/latest/download/manifests.yaml"},
    "train",
    true,
    "-node-0-",
    render_jobset};

}  // namespace ktrain::render::targets
