// train.target: tfjob: a Kubeflow Training Operator TFJob (kubeflow.org/v1): train.nodes
// Workers (worker 0 is the chief of MultiWorkerMirroredStrategy). The operator sets
// TF_CONFIG and makes a Service per pod; ktrain-launch takes its node rank from the
// replica index label and meets the others at worker 0's Service.

#include <string>
#include <vector>

#include "render/targets/kubeflow.h"
#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

std::vector<ordered_json> render_tfjob(const detail::RenderContext& ctx, const std::string& run,
                                       const std::string& sweep, const project::SweepPoint& point) {
  const auto& t = *ctx.project.train;
  auto [job, labels] = kubeflow_job(ctx, "tfjob.yaml", run, sweep, point);

  detail::TrainPodWiring w;
  w.container = "tensorflow";  // the operator sets TF_CONFIG in the container of this name
  w.master_addr = run + "-worker-0";
  w.volcano_annotation = false;
  w.rank_env =
      ordered_json::array({detail::env_from_field("KTRAIN_NODE_RANK", kKubeflowReplicaIndex)});
  auto& spec = job["spec"];
  spec["tfReplicaSpecs"] = {{"Worker", kubeflow_replica(t.nodes, detail::train_pod_template(
                                                                     ctx, run, labels, point, w))}};
  return {std::move(job)};
}

}  // namespace

extern const TrainTarget kTFJob = {
    "tfjob",
    {"kubeflow.org/v1", "TFJob", "tfjobs", "tfjobs.kubeflow.org",
     "install the Kubeflow Training Operator: kubectl apply --server-side -k "
     "\"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.2\""},
    "tensorflow",
    true,
    "-worker-",
    render_tfjob};

}  // namespace ktrain::render::targets
