#include "render/targets/kubeflow.h"

namespace ktrain::render::targets {

using nlohmann::ordered_json;

KubeflowJob kubeflow_job(const detail::RenderContext& ctx, const char* file, const std::string& run,
                         const std::string& sweep, const project::SweepPoint& point) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  const auto& s = p.scheduling;
  KubeflowJob out{ctx.load(file), detail::common_labels(p, run, sweep)};
  const bool queued = detail::is_queued(ctx, run, point);
  detail::set_run_metadata(ctx, out.object, run, out.labels, point, queued);
  ordered_json rp = {{"cleanPodPolicy", "None"}, {"backoffLimit", t.restarts}};
  if (t.deadline_s) rp["activeDeadlineSeconds"] = *t.deadline_s;
  if (t.ttl_s) rp["ttlSecondsAfterFinished"] = *t.ttl_s;
  if (queued) rp["suspend"] = true;
  if (!s.managed_by.empty()) rp["managedBy"] = s.managed_by;  // MultiKueue runs it
  if (s.gang == "volcano") {
    // The operator makes the PodGroup itself when its gang scheduler is Volcano.
    ordered_json sp = {{"minAvailable", t.nodes}};
    if (!s.queue.empty()) sp["queue"] = s.queue;
    if (!s.priority.empty()) sp["priorityClass"] = s.priority;
    if (auto min = detail::gang_min_resources(t); !min.is_null()) sp["minResources"] = min;
    rp["schedulingPolicy"] = sp;
  }
  out.object["spec"]["runPolicy"] = std::move(rp);
  return out;
}

/// A replica spec: count, restart policy and pod template.
ordered_json kubeflow_replica(int replicas, ordered_json pod_template) {
  return {
      {"replicas", replicas}, {"restartPolicy", "Never"}, {"template", std::move(pod_template)}};
}

}  // namespace ktrain::render::targets
