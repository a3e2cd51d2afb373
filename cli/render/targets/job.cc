// train.target: job (the default): [PodGroup], a headless Service and an Indexed Job.
// Needs no operator: the Job controller of every cluster runs it.

#include <string>
#include <vector>

#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

ordered_json headless_service(const detail::RenderContext& ctx, const std::string& run,
                              const ordered_json& labels) {
  ordered_json svc = ctx.load("service-headless.yaml");
  detail::set_metadata(svc, ctx.project, run, labels);
  auto& spec = svc["spec"];
  spec["clusterIP"] = "None";
  spec["publishNotReadyAddresses"] = true;
  spec["selector"] = {{kLabelRun, run}};
  return svc;
}

ordered_json job(const detail::RenderContext& ctx, const std::string& run,
                 const ordered_json& labels, const project::SweepPoint& point) {
  const auto& t = *ctx.project.train;
  ordered_json job = ctx.load("job.yaml");
  // Beyond train.sweep.parallel, a run waits: suspended, marked queued.
  const bool queued = detail::is_queued(ctx, run, point);
  detail::set_run_metadata(ctx, job, run, labels, point, queued);

  auto& spec = job["spec"];
  spec["completionMode"] = "Indexed";
  spec["completions"] = t.nodes;
  spec["parallelism"] = t.nodes;
  spec["backoffLimit"] = t.restarts;
  if (queued) spec["suspend"] = true;
  if (t.deadline_s) spec["activeDeadlineSeconds"] = *t.deadline_s;
  if (t.ttl_s) spec["ttlSecondsAfterFinished"] = *t.ttl_s;
  detail::set_job_policies(ctx, spec);
  if (auto m = detail::job_managed_by(ctx); !m.empty()) spec["managedBy"] = m;

  detail::TrainPodWiring w;
  w.master_addr = run + "-0." + run;
  w.subdomain = run;
  w.job_uid_rendezvous = true;
  w.rank_env.push_back(detail::env_from_field(
      "JOB_COMPLETION_INDEX", "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  spec["template"] = detail::train_pod_template(ctx, run, labels, point, w);
  return job;
}

std::vector<ordered_json> render(const detail::RenderContext& ctx, const std::string& run,
                                 const std::string& sweep, const project::SweepPoint& point) {
  const ordered_json labels = detail::common_labels(ctx.project, run, sweep);
  std::vector<ordered_json> out;
  if (ctx.project.scheduling.gang == "volcano") {
    out.push_back(detail::render_podgroup(ctx, run, labels));
  }
  out.push_back(headless_service(ctx, run, labels));
  out.push_back(job(ctx, run, labels, point));
  return out;
}

}  // namespace

extern const TrainTarget kJob = {"job", {"batch/v1", "Job", "jobs", "", ""}, "train", true, "-",
                                 render};

}  // namespace ktrain::render::targets
