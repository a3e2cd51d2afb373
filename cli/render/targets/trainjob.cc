// train.target: trainjob: a Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1) on a
// ClusterTrainingRuntime (train.runtime; torch-distributed for PyTorch). The runtime's
// JobSet makes one pod per node (<run>-node-0-<rank>.<run>); the trainer's container
// runs ktrain-launch, which finds its rank in JOB_COMPLETION_INDEX. What ktrain sets on
// the pods beyond the trainer's fields (volumes, scheduling, security) goes into a
// runtime patch, which can change the runtime's containers but not add one (the CRD's
// ContainerPatch holds a name, env, volume mounts and a security context: no image).
// So an image without ktrain-launch (a stock image) runs on a TrainingRuntime of the
// run's own, in the run's namespace: the whole pod as ktrain renders it, the init
// container that copies the launcher included, owned by the TrainJob once it is made.

#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "project/targets.h"
#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

/// The runtimes' trainer replicated Job and container.
constexpr const char* kNode = "node";

std::vector<ordered_json> render_trainjob(const detail::RenderContext& ctx, const std::string& run,
                                          const std::string& sweep,
                                          const project::SweepPoint& point) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  const ordered_json labels = detail::common_labels(p, run, sweep);
  const bool queued = detail::is_queued(ctx, run, point);

  ordered_json tj = ctx.load("trainjob.yaml");
  detail::set_run_metadata(ctx, tj, run, labels, point, queued);
  auto& spec = tj["spec"];
  if (queued) spec["suspend"] = true;
  if (t.deadline_s) spec["activeDeadlineSeconds"] = *t.deadline_s;
  if (!p.scheduling.managed_by.empty()) spec["managedBy"] = p.scheduling.managed_by;
  spec["runtimeRef"] = {{"name", project::trainjob_runtime(t)}};

  detail::TrainPodWiring w;
  w.container = kNode;
  w.master_addr = run + "-node-0-0." + run;
  w.volcano_annotation = false;
  w.volcano_scheduler = false;
  // JOB_COMPLETION_INDEX is set by the Job controller in every Indexed Job's pods.
  ordered_json tmpl = detail::train_pod_template(ctx, run, labels, point, w);
  auto& pod = tmpl["spec"];
  ordered_json container;
  for (auto& c : pod["containers"]) {
    if (c.value("name", "") == kNode) container = c;
  }
  ordered_json trainer = {{"image", container["image"]},
                          {"command", container["command"]},
                          {"args", container["args"]},
                          {"env", container["env"]},
                          {"numNodes", t.nodes}};
  if (t.processes_per_node > 0) trainer["numProcPerNode"] = t.processes_per_node;
  if (container.contains("resources") && !container["resources"].is_null()) {
    trainer["resourcesPerNode"] = container["resources"];
  }
  spec["trainer"] = std::move(trainer);

  if (ctx.launcher.inject) {
    // The run's own runtime: the pods as rendered, init container and all.
    ordered_json rt = ctx.load("trainingruntime.yaml");
    detail::set_metadata(rt, p, run, labels);
    rt["spec"]["mlPolicy"]["numNodes"] = t.nodes;
    auto& rj = rt["spec"]["template"]["spec"]["replicatedJobs"][0];
    rj["name"] = kNode;
    rj["template"]["spec"]["template"] = std::move(tmpl);
    spec["runtimeRef"] = {
        {"apiGroup", "trainer.kubeflow.org"}, {"kind", "TrainingRuntime"}, {"name", run}};
    spec.erase("runtimePatches");
    return {std::move(rt), std::move(tj)};
  }

  // The rest, as a patch of the runtime's pods: only the fields a patch may set.
  ordered_json patch_container = {{"name", kNode}};
  for (const char* key : {"volumeMounts", "securityContext"}) {
    if (container.contains(key)) patch_container[key] = container[key];
  }
  static const std::set<std::string> kPatchable = {"affinity",     "imagePullSecrets",
                                                   "nodeSelector", "securityContext",
                                                   "tolerations",  "terminationGracePeriodSeconds",
                                                   "volumes"};
  ordered_json patch_pod = ordered_json::object();
  for (auto it = pod.begin(); it != pod.end(); ++it) {
    if (kPatchable.count(it.key()) && !it.value().is_null()) patch_pod[it.key()] = it.value();
  }
  patch_pod["containers"] = ordered_json::array({patch_container});
  ordered_json patch_meta = {{"labels", tmpl["metadata"]["labels"]}};
  if (tmpl["metadata"].contains("annotations") && tmpl["metadata"]["annotations"].is_object()) {
    patch_meta["annotations"] = tmpl["metadata"]["annotations"];
  }
  ordered_json job_template = {
      {"spec", {{"template", {{"metadata", patch_meta}, {"spec", patch_pod}}}}}};
  spec["runtimePatches"] = ordered_json::array(
      {{{"manager", "ktrain.dev/ktrain"},
        {"trainingRuntimeSpec",
         {{"template",
           {{"spec",
             {{"replicatedJobs",
               ordered_json::array({{{"name", kNode}, {"template", job_template}}})}}}}}}}}});
  return {std::move(tj)};
}

}  // namespace

extern const TrainTarget kTrainJob = {
    "trainjob",
    {"trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs", "trainjobs.trainer.kubeflow.org",
     "install Kubeflow Trainer and its runtimes: kubectl apply --server-side -k "
     "\"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=master\""},
    kNode,
    true,
    "-node-0-",
    render_trainjob};

}  // namespace ktrain::render::targets
