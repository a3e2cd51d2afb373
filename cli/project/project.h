#pragma once
// Project: the parsed and validated ktrain.yaml (spec/ktrain-yaml.md, man/ktrain.yaml.5).
// A plain value: parsing and validation live in project/parse.h, rendering in render/.
// Every field here has passed validation; quantities and durations are kept as the
// user wrote them (already checked) and, where the renderer needs a number, converted.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktrain::project {

/// An ordered list of key/value pairs (file order is kept so that output is deterministic
/// and reads like the input).
using StringPairs = std::vector<std::pair<std::string, std::string>>;

/// `image.build`: how `ktrain build` makes the training image.
struct ImageBuild {
  std::string base;        ///< base image reference (required when build is given)
  std::string repository;  ///< where to push (required when build is given)
  std::string context;     ///< absolute path; default: the project file's folder
  std::vector<std::string> ignore;
  std::string workdir = "/workspace";
  StringPairs env;
};

/// `image`: the short form sets only `ref`.
struct Image {
  std::string ref;  ///< the image to run; may be empty only when `build` is given
  std::vector<std::string> pull_secrets;
  std::optional<ImageBuild> build;
};

/// One entry of `train.volumes`. Exactly one source kind is set.
struct Volume {
  enum class Kind { kClaim, kConfigMap, kSecret, kEmptyDir };
  Kind kind = Kind::kClaim;
  std::string source;  ///< the claim/configMap/secret name (empty for emptyDir)
  std::string mount;   ///< absolute path in the container
  bool read_only = false;
  bool checkpoint = false;  ///< KTRAIN_CHECKPOINT_DIR names its mount path
};

/// One entry of `train.envFrom` (`secret/NAME` or `configMap/NAME`).
struct EnvFrom {
  enum class Kind { kSecret, kConfigMap };
  Kind kind = Kind::kSecret;
  std::string name;
};

/// `train.sweep`: a grid, parameters in file order, values in file order.
struct SweepParam {
  std::string name;  ///< as written (lr); reaches the job as KTRAIN_PARAM_<NAME upper-cased>
  std::vector<std::string> values;
};

/// One rule of `train.retry`: what a failed pod's exit code (of the train container)
/// or its disruption does to the run. Rendered, in order and before ktrain's own rules,
/// to the Job's podFailurePolicy.
struct RetryRule {
  enum class Match {
    kExitCodes,       ///< `exitCodes: [..]`
    kOtherExitCodes,  ///< `otherExitCodes: true`: any exit code no rule names
    kDisruption,      ///< `disruption: true`: preemption, eviction, node loss
  };
  Match match = Match::kExitCodes;
  std::vector<int> exit_codes;  ///< kExitCodes: 1..255, sorted, distinct
  /// fail: the run fails at once; retry: a new pod, counted against train.restarts;
  /// retry-free: a new pod, not counted.
  std::string action;
};

/// The most train.retry rules: a Job's podFailurePolicy holds 20, and ktrain's own
/// (a peer's stop, a disruption, the launcher's configuration error) take 3.
inline constexpr std::size_t kMaxRetryRules = 17;

/// The shortest train.watchdog.timeout: a worker may print nothing while it starts
/// (imports, the first batches, NCCL's set-up).
inline constexpr std::int64_t kMinWatchdogSeconds = 60;

/// `train`.
struct Train {
  std::vector<std::string> command;   ///< required, non-empty
  std::string framework = "pytorch";  ///< pytorch | paddle | tensorflow | jax | none
  /// What the run is rendered to: job | pytorchjob | tfjob | mpijob | trainjob | jobset.
  std::string target = "job";
  std::string runtime;  ///< target trainjob: the ClusterTrainingRuntime
  int nodes = 1;        ///< >= 1; elastic: the most nodes
  /// Elastic nodes (`nodes: min..max`): the fewest nodes a run goes on with; 0 = a
  /// fixed count. Target pytorchjob only (Kubeflow's elasticPolicy, torchrun's c10d
  /// rendezvous).
  int min_nodes = 0;
  int gpus = 0;  ///< per node, >= 0
  /// Workers per node; 0 = one per GPU found (or 1 without GPUs).
  int processes_per_node = 0;
  std::string mig;       ///< e.g. "1g.10gb": GPUs become nvidia.com/mig-<mig>
  std::string gpu_type;  ///< -> nodeSelector nvidia.com/gpu.product
  /// The CUDA version the image needs ("12.1"); "" = read from the image when it can be.
  std::string cuda;
  std::string cpu;     ///< Kubernetes quantity, "" = unset
  std::string memory;  ///< Kubernetes quantity, "" = unset
  std::string shm;     ///< size of /dev/shm (memory emptyDir), "" = none
  StringPairs env;
  std::vector<EnvFrom> env_from;
  std::vector<Volume> volumes;
  int restarts = 0;                        ///< backoffLimit
  std::vector<RetryRule> retry;            ///< train.retry, in file order
  std::optional<std::int64_t> deadline_s;  ///< activeDeadlineSeconds
  std::optional<std::int64_t> ttl_s;       ///< ttlSecondsAfterFinished
  /// terminationGracePeriodSeconds: from SIGTERM (stop, delete, preemption) to SIGKILL.
  std::int64_t grace_period_s = 30;
  /// train.watchdog.timeout: a worker with no output and no heartbeat for this long
  /// is hung (KTRAIN_WATCHDOG_TIMEOUT); 0 = no watchdog.
  std::int64_t watchdog_s = 0;
  bool sync = false;  ///< submit pushes the workspace's changes as a layer first (--sync)
  std::string preflight = "quick";  ///< off | quick | full
  std::vector<SweepParam> sweep;    ///< empty = no sweep
  /// train.sweep.parallel: at most this many runs of the sweep at once; 0 = all.
  int sweep_parallel = 0;
  /// train.notify: what `submit --wait` does when a run ends ("" = nothing).
  std::string notify_command;  ///< run with /bin/sh -c
  std::string notify_url;      ///< gets a JSON POST
};

/// How long ktrain-launch gives its workers after passing SIGTERM on, before SIGKILL,
/// within a grace period of `grace_s`: 5 s less (the launcher then still reports how
/// the node ended before the kubelet kills the pod), or three quarters of a grace
/// period of 20 s or less; at least 1 s.
inline std::int64_t launcher_grace_seconds(std::int64_t grace_s) {
  const std::int64_t g = grace_s > 20 ? grace_s - 5 : grace_s * 3 / 4;
  return g < 1 ? 1 : g;
}

/// The mount path of the volume marked `checkpoint: true`, or "" when none is.
inline std::string checkpoint_dir(const std::vector<Volume>& volumes) {
  for (const auto& v : volumes) {
    if (v.checkpoint) return v.mount;
  }
  return "";
}

/// A toleration, from "key=value:Effect", "key:Effect", "key" or a full object.
struct Toleration {
  std::string key;
  std::string op;  ///< "Equal" or "Exists"
  std::string value;
  std::string effect;  ///< "", NoSchedule, PreferNoSchedule, NoExecute
  std::optional<std::int64_t> toleration_seconds;
};

/// `scheduling`.
struct Scheduling {
  std::string queue;          ///< Kueue LocalQueue name
  std::string gang = "none";  ///< none | kueue | volcano
  std::string priority;       ///< priorityClassName
  StringPairs node_selector;
  std::vector<Toleration> tolerations;
  bool tolerations_set =
      false;  ///< the user wrote `tolerations` (even empty): no default GPU toleration
  std::string runtime_class;
  /// The controller that runs the run's workload instead of its own (spec.managedBy; for
  /// MultiKueue, kueue.x-k8s.io/multikueue); "" = its own.
  std::string managed_by;
};

/// `launcher`: how the training container gets /opt/ktrain/bin/ktrain-launch.
struct Launcher {
  /// auto: injected unless the image is the one `image.build` makes; always; never (the
  /// image has the launcher already).
  enum class Inject { kAuto, kAlways, kNever };
  Inject inject = Inject::kAuto;
  /// The image the init container copies the launcher from: launcher.image, else
  /// KTRAIN_LAUNCHER_IMAGE (read by load_project), else default_image().
  std::string image = default_image();
  /// Where `image` came from: "launcher.image", "KTRAIN_LAUNCHER_IMAGE" or "default".
  std::string image_from = "default";

  /// The launcher image of this release (`ktrain build --launcher-image REF` makes one).
  static std::string default_image() {
    return std::string(kDefaultRepository) + ":" + KTRAIN_VERSION;
  }
  static constexpr const char* kDefaultRepository = "ghcr.io/ktrain/ktrain-launch";
};

/// `security`.
struct Security {
  /// The user and group when the project runs as non-root and names none: a
  /// numeric user, which the kubelet can check against runAsNonRoot (most stock
  /// images run as root or as a named user, which it refuses).
  static constexpr std::int64_t kDefaultUser = 1000;
  std::optional<std::int64_t> run_as_user;
  std::optional<std::int64_t> run_as_group;
  std::optional<std::int64_t> fs_group;
  bool run_as_non_root = true;
  std::vector<std::string> add_capabilities;  ///< all others are dropped

  /// The user the pods run as: the project's runAsUser, else kDefaultUser when
  /// non-root; nullopt: the image's user (runAsNonRoot: false and no runAsUser).
  std::optional<std::int64_t> user() const {
    if (run_as_user) return run_as_user;
    if (run_as_non_root) return kDefaultUser;
    return std::nullopt;
  }
  /// Their group: runAsGroup, else the user's id when ktrain chose the user.
  std::optional<std::int64_t> group() const {
    if (run_as_group) return run_as_group;
    if (!run_as_user && run_as_non_root) return kDefaultUser;
    return std::nullopt;
  }
  /// The group that owns the volumes: fsGroup, else the group ktrain chose.
  std::optional<std::int64_t> volume_group() const {
    if (fs_group) return fs_group;
    if (!run_as_user && !run_as_group && run_as_non_root) return kDefaultUser;
    return std::nullopt;
  }
};

/// An HTTP GET probe of `serve`.
struct Probe {
  std::string path;  ///< starts with '/'
  int port = 0;      ///< 0 = serve.port
  int initial_delay_s = 0;
  int period_s = 10;
  int failure_threshold = 3;
};

/// A Pods metric for the HPA (through the custom metrics API).
struct PodsMetric {
  std::string name;
  std::string target;  ///< average value, a quantity
};

/// `serve.autoscale`.
struct Autoscale {
  int min = 1;
  int max = 1;
  std::optional<int> cpu;  ///< target average CPU utilisation, percent
  std::optional<PodsMetric> metric;
};

/// `serve.rollout`: int or percentage strings as Kubernetes takes them.
struct Rollout {
  nlohmann::json max_surge = 1;        ///< int or "25%"
  nlohmann::json max_unavailable = 0;  ///< int or "25%"
};

/// `serve`: an inference service.
struct Serve {
  std::vector<std::string> command;   ///< empty = the image's entrypoint
  int port = 0;                       ///< 1..65535; required unless `runtime` is set
  std::string target = "deployment";  ///< deployment | kserve | lws
  std::string runtime;       ///< target kserve: "" (the project's container) | triton | vllm
  std::string model_uri;     ///< with `runtime`: KServe's storageUri
  std::string model_format;  ///< with `runtime`: the modelFormat; "" = the runtime's
  int nodes = 1;             ///< target lws: pods per replica (leader + workers)
  int gpus = 0;
  std::string gpu_type;  ///< -> nodeSelector nvidia.com/gpu.product
  std::string cuda;      ///< as Train::cuda
  std::string cpu;
  std::string memory;
  std::string shm;  ///< /dev/shm size (a memory-backed emptyDir); "" = none
  StringPairs env;
  std::vector<EnvFrom> env_from;
  std::vector<Volume> volumes;  ///< model weights, caches, configs
  std::optional<int> replicas;  ///< fixed count; with autoscale, the HPA owns the count
  std::optional<Autoscale> autoscale;
  std::optional<Probe> readiness;
  std::optional<Probe> liveness;
  /// Holds the liveness probe off until the model has loaded; default: the readiness
  /// (else liveness) path, every 10 s, up to 30 minutes.
  std::optional<Probe> startup;
  Rollout rollout;
  bool spread = true;      ///< replicas spread across nodes (topologySpreadConstraints)
  bool disruption = true;  ///< a PodDisruptionBudget when there is more than one replica
};

/// The whole project file.
struct Project {
  std::string file;        ///< where it was read from ("-" for stdin)
  std::string directory;   ///< the folder of the project file (absolute)
  std::string name;        ///< DNS-1123 label, <= 40 characters
  std::string namespace_;  ///< "" = the kubeconfig context's namespace, else "default"
  StringPairs labels;
  Image image;
  std::optional<Train> train;
  Scheduling scheduling;
  Security security;
  Launcher launcher;
  std::optional<Serve> serve;
  /// RFC 7386 merge patches, by rendered kind (Job, Service, Deployment, ...), in file order.
  std::vector<std::pair<std::string, nlohmann::ordered_json>> patches;
};

}  // namespace ktrain::project
