// train.target: mpijob: a Kubeflow Training Operator MPIJob (kubeflow.org/v1): a Launcher
// that runs train.command (mpirun ...) and train.nodes Workers with the GPUs, each with
// slotsPerWorker slots. The operator starts the Workers idle and mpirun reaches them
// through its exec agent, so ktrain-launch is not the entrypoint here: mpirun spawns the
// processes, and the operator's hostfile says where.

#include <string>
#include <vector>

#include "render/targets/kubeflow.h"
#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

std::vector<ordered_json> render(const detail::RenderContext& ctx, const std::string& run,
                                 const std::string& sweep, const project::SweepPoint& point) {
  const auto& t = *ctx.project.train;
  auto [job, labels] = kubeflow_job(ctx, "mpijob.yaml", run, sweep, point);

  auto& spec = job["spec"];
  // The Workers only serve the Launcher's mpirun: once it has ended, the operator
  // removes those still running (their GPUs go back), and keeps the Launcher's log.
  spec["runPolicy"]["cleanPodPolicy"] = "Running";
  spec["slotsPerWorker"] = t.processes_per_node > 0 ? t.processes_per_node
                           : t.gpus > 0             ? t.gpus
                                                    : 1;
  detail::TrainPodWiring launcher;
  launcher.container = "mpi";
  launcher.launched = false;
  launcher.run_command = true;
  launcher.gpus = false;
  launcher.volcano_annotation = false;
  detail::TrainPodWiring worker = launcher;
  worker.run_command = false;  // the operator keeps the Workers idle for mpirun
  worker.gpus = true;
  spec["mpiReplicaSpecs"] = {
      {"Launcher",
       kubeflow_replica(1, detail::train_pod_template(ctx, run, labels, point, launcher))},
      {"Worker",
       kubeflow_replica(t.nodes, detail::train_pod_template(ctx, run, labels, point, worker))}};
  return {std::move(job)};
}

}  // namespace

extern const TrainTarget kMPIJob = {
    "mpijob",
    {"kubeflow.org/v1", "MPIJob", "mpijobs", "mpijobs.kubeflow.org",
     "install the Kubeflow Training Operator: kubectl apply --server-side -k "
     "\"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.2\""},
    "mpi",
    false,
    "-worker-",
    render};

}  // namespace ktrain::render::targets
