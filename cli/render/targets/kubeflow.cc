#include "render/targets/kubeflow.h"

namespace ktrain::render::targets {

using nlohmann::ordered_json;

/// The Training Operator's runPolicy: retries, deadline, TTL, gang scheduling.
ordered_json kubeflow_run_policy(const detail::RenderContext& ctx, bool queued) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  const auto& s = p.scheduling;
  ordered_json rp = {{"cleanPodPolicy", "None"}, {"backoffLimit", t.restarts}};
  if (t.deadline_s) rp["activeDeadlineSeconds"] = *t.deadline_s;
  if (t.ttl_s) rp["ttlSecondsAfterFinished"] = *t.ttl_s;
  if (queued) rp["suspend"] = true;
  if (s.gang == "volcano") {
    // The operator makes the PodGroup itself when its gang scheduler is Volcano.
    ordered_json sp = {{"minAvailable", t.nodes}};
    if (!s.queue.empty()) sp["queue"] = s.queue;
    if (!s.priority.empty()) sp["priorityClass"] = s.priority;
    ordered_json min = ordered_json::object();
    if (!t.cpu.empty()) min["cpu"] = multiply_quantity(t.cpu, t.nodes);
    if (!t.memory.empty()) min["memory"] = multiply_quantity(t.memory, t.nodes);
    if (t.gpus > 0) min[detail::gpu_resource_name(t.mig)] = std::to_string(t.gpus * t.nodes);
    if (!min.empty()) sp["minResources"] = min;
    rp["schedulingPolicy"] = sp;
  }
  return rp;
}

/// The metadata of an operator's object: labels (Kueue's queue unless queued),
/// annotations (a sweep's parameters, a waiting run's queue).
void kubeflow_metadata(const detail::RenderContext& ctx, ordered_json& obj, const std::string& run,
                       const ordered_json& labels, const project::SweepPoint& point, bool queued) {
  const auto& s = ctx.project.scheduling;
  ordered_json l = labels;
  const bool kueue = s.gang != "volcano" && !s.queue.empty();
  if (kueue && !queued) l[kLabelKueueQueue] = s.queue;
  if (queued) l[kLabelQueued] = "true";
  detail::set_metadata(obj, ctx.project, run, l);
  if (kueue && queued) obj["metadata"]["annotations"][kAnnotationQueue] = s.queue;
  if (point.index >= 0) {
    obj["metadata"]["annotations"][kAnnotationParams] = detail::params_annotation(point);
  }
}

/// A replica spec: count, restart policy and pod template.
ordered_json kubeflow_replica(int replicas, ordered_json pod_template) {
  return {
      {"replicas", replicas}, {"restartPolicy", "Never"}, {"template", std::move(pod_template)}};
}

}  // namespace ktrain::render::targets
