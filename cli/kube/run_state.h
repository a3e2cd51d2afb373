#pragma once
// Reading a run's state from the objects the API server returns: a Job becomes a
// RunSummary; a Job, its pods and the events about them become a RunStatus with one
// row per rank and plain-language explanations (unschedulable, image pull, quota,
// out of memory). Pure functions of JSON, so they are tested without a server.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/run_status.h"

namespace ktrain::kube {

/// Label and annotation names that Kubernetes and ktrain put on a run's objects.
inline constexpr const char* kLabelRun = "ktrain.dev/run";
inline constexpr const char* kLabelSweep = "ktrain.dev/sweep";
inline constexpr const char* kLabelManagedBy = "app.kubernetes.io/managed-by";
/// Set on a Job that `ktrain stop` suspended (and removed by `ktrain resume`).
inline constexpr const char* kLabelStopped = "ktrain.dev/stopped";
/// When `ktrain stop` suspended the Job (RFC 3339).
inline constexpr const char* kAnnotationStoppedAt = "ktrain.dev/stopped-at";
inline constexpr const char* kCompletionIndex = "batch.kubernetes.io/job-completion-index";

/// Whether `obj` carries app.kubernetes.io/managed-by=ktrain.
bool managed_by_ktrain(const nlohmann::json& obj);

/// Whether another object controls `obj` (a controller ownerReference): a Job that a
/// JobSet made of a run's replicated job carries the run's labels, but it is not a run.
bool has_controller(const nlohmann::json& obj);

/// The state, size and age of a training Job.
RunSummary summarize_job(const nlohmann::json& job);

/// The state, size and age of a service's Deployment (kind "serve"): Running when
/// every replica it asks for is ready, else Pending; nodes = the replicas asked for.
RunSummary summarize_deployment(const nlohmann::json& deployment);

/// The state, size and age of an operator's object (train.target / serve.target other
/// than the defaults: PyTorchJob, TFJob, MPIJob, JobSet, TrainJob, InferenceService,
/// LeaderWorkerSet), from its own conditions and status.
RunSummary summarize_operator(const nlohmann::json& obj);

/// `ktrain status` of a service: its Deployment's (InferenceService's,
/// LeaderWorkerSet's) conditions, one row per pod (oldest first), and why replicas
/// cannot start.
RunStatus describe_service(const nlohmann::json& deployment,
                           const std::vector<nlohmann::json>& pods);

/// The labels the Kubeflow Training Operator puts on its pods: "master", "worker",
/// "launcher"; the replica's index among those of its type.
inline constexpr const char* kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr const char* kLabelReplicaIndex = "training.kubeflow.org/replica-index";

/// The node index of a run's pod, or -1: a Job's (and a JobSet's or TrainJob's Jobs')
/// job-completion-index; for the Kubeflow operators' pods, from the replica's type and
/// index (PyTorchJob: Master 0, Worker i is i+1; MPIJob: Launcher 0, Worker i is i+1;
/// TFJob: Worker i is i).
int pod_rank(const nlohmann::json& pod);

/// The container of `pod` whose log is the run's: the one the pod's
/// kubectl.kubernetes.io/default-container annotation names (the operators' targets:
/// pytorch, tensorflow, mpi, node), else "train".
std::string log_container(const nlohmann::json& pod);

/// How `ktrain status` asks a running pod for its run's newest checkpoint: the
/// launcher (at render::kLauncherDir) with --latest-checkpoint, in the run's own
/// container, where that container runs ktrain-launch and has a checkpoint folder
/// (KTRAIN_CHECKPOINT_DIR). Empty when `pod` (a full object, its env included) has
/// neither: there is nothing to ask.
struct CheckpointQuery {
  std::string container;
  std::vector<std::string> command;
  std::string dir;  ///< KTRAIN_CHECKPOINT_DIR
};
std::optional<CheckpointQuery> checkpoint_query(const nlohmann::json& pod);

/// The launcher's answer to --latest-checkpoint ("<seconds since the epoch> <path>\n",
/// or nothing when the folder holds no complete checkpoint yet): the path and when it
/// was written; nullopt for no checkpoint or an answer of another shape.
struct CheckpointSeen {
  std::string path;
  std::chrono::system_clock::time_point written;
};
std::optional<CheckpointSeen> parse_latest_checkpoint(std::string_view answer);

/// Everything `ktrain status` shows, from the Job (or the operator's object of another
/// train.target: PyTorchJob, TFJob, MPIJob, JobSet, TrainJob; its conditions read the
/// same way, and a pending one without status is said to wait for its operator), its pods (any
/// order; for a rank with several pods the newest counts) and the events in its namespace (those
/// about other objects are ignored). `now` dates how long a pod has waited for the Cluster
/// Autoscaler. `nodes` (may be empty: not readable) explain a pod that no node's driver can run.
RunStatus describe_run(const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
                       const std::vector<nlohmann::json>& events,
                       std::chrono::system_clock::time_point now = std::chrono::system_clock::now(),
                       const std::vector<nlohmann::json>& nodes = {});

/// Whether `pod` is unscheduled and carries the CUDA version its image needs
/// (render::kAnnotationCuda): then the nodes tell why (cuda_unschedulable).
bool waits_for_cuda_node(const nlohmann::json& pod);

/// Why no node can run unscheduled `pod` (annotated with the CUDA version its image
/// needs), from the nodes' GPU feature discovery labels: "no node has a driver for CUDA
/// 12.1: nodes have 11.2, 11.4"; "" when a GPU node runs it or is not labelled (so the
/// reason is another), or no node has GPUs.
std::string cuda_unschedulable(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes);

/// ktrain-launch's exit status when the node's driver cannot run the image's CUDA
/// version (ktrain-launch(1)).
inline constexpr int kExitCudaDriver = 79;
/// ktrain-launch's exit status when its watchdog found a worker hung.
inline constexpr int kExitHung = 74;

/// The name of the container that runs the work in a ktrain pod ("train").
inline constexpr const char* kTrainContainer = "train";

/// The training container of a pod spec (a pod's, or a pod template's): the one named
/// `name`, else the first; nullptr when it has none.
const nlohmann::json* train_container_spec(const nlohmann::json& pod_spec,
                                           const std::string& name = kTrainContainer);

}  // namespace ktrain::kube
