// train.target: pytorchjob: a Kubeflow Training Operator PyTorchJob (kubeflow.org/v1):
// a Master (node 0) and train.nodes - 1 Workers. The operator sets MASTER_ADDR,
// WORLD_SIZE and RANK and makes a Service per pod; ktrain-launch, the container's
// entrypoint, takes its node rank from the replica index the operator labels the pod
// with (Workers + 1) and meets the others at the Master's Service. With elastic nodes
// (train.nodes: min..max), Workers only, with the operator's elasticPolicy.

#include <string>
#include <vector>

#include "render/targets/kubeflow.h"
#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

std::vector<ordered_json> render_pytorchjob(const detail::RenderContext& ctx,
                                            const std::string& run, const std::string& sweep,
                                            const project::SweepPoint& point) {
  const auto& t = *ctx.project.train;
  auto [job, labels] = kubeflow_job(ctx, "pytorchjob.yaml", run, sweep, point);

  detail::TrainPodWiring w;
  w.container = "pytorch";  // the operator sets its variables in the container of this name
  w.master_addr = run + "-master-0";
  w.volcano_annotation = false;  // the operator names its own PodGroup
  auto& spec = job["spec"];
  auto& replicas = spec["pytorchReplicaSpecs"];
  replicas = ordered_json::object();
  if (t.min_nodes > 0) {
    // Elastic: Workers only, between min and max of them; in each, ktrain-launch hands
    // the node's workers to torchrun's elastic agent, which meets the others at the
    // first Worker's Service (c10d) and starts again, from the newest checkpoint, when
    // a node leaves or joins.
    w.master_addr = run + "-worker-0";
    w.rank_env = ordered_json::array(
        {detail::env_from_field("KTRAIN_NODE_RANK", kKubeflowReplicaIndex),
         detail::env_literal("KTRAIN_ELASTIC",
                             std::to_string(t.min_nodes) + ":" + std::to_string(t.nodes)),
         detail::env_literal("KTRAIN_ELASTIC_RESTARTS", std::to_string(t.restarts))});
    replicas["Worker"] =
        kubeflow_replica(t.nodes, detail::train_pod_template(ctx, run, labels, point, w));
    // After the replicas: a new key of `spec` would move what `replicas` refers to.
    spec["elasticPolicy"] = {{"rdzvBackend", "c10d"},
                             {"minReplicas", t.min_nodes},
                             {"maxReplicas", t.nodes},
                             {"maxRestarts", t.restarts}};
    return {std::move(job)};
  }
  w.rank_env = ordered_json::array({detail::env_literal("KTRAIN_NODE_RANK", "0")});
  replicas["Master"] = kubeflow_replica(1, detail::train_pod_template(ctx, run, labels, point, w));
  if (t.nodes > 1) {
    w.rank_env =
        ordered_json::array({detail::env_from_field("KTRAIN_NODE_RANK", kKubeflowReplicaIndex),
                             detail::env_literal("KTRAIN_NODE_RANK_OFFSET", "1")});
    replicas["Worker"] =
        kubeflow_replica(t.nodes - 1, detail::train_pod_template(ctx, run, labels, point, w));
  }
  return {std::move(job)};
}

}  // namespace

extern const TrainTarget kPyTorchJob = {
    "pytorchjob",
    {"kubeflow.org/v1", "PyTorchJob", "pytorchjobs", "pytorchjobs.kubeflow.org",
     "install the Kubeflow Training Operator: kubectl apply --server-side -k "
     "\"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.2\""},
    "pytorch",
    true,
    "-worker-",
    render_pytorchjob};

}  // namespace ktrain::render::targets
