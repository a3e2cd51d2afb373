#pragma once
// The launcher's configuration: topology, ports, framework and preflight level,
// from the KTRAIN_* environment that the rendered Job sets, overridden by flags.

#include <map>
#include <string>
#include <vector>

namespace ktrain::launch {

/// The training framework whose launcher conventions the worker environment follows.
enum class Framework { kNone, kPytorch, kPaddle, kTensorflow, kJax };

/// How much the GPU preflight checks before the workers start.
enum class Preflight { kOff, kQuick, kFull };

/// Returns "pytorch", "paddle", ... for a framework.
const char* framework_name(Framework f);

/// Returns "off", "quick" or "full".
const char* preflight_name(Preflight p);

/// Everything the launcher was asked to do.
struct Config {
  std::string run = "ktrain";   ///< KTRAIN_RUN: the run name (TORCHELASTIC_RUN_ID)
  int nnodes = 1;               ///< number of nodes (launchers) in the job
  int node_rank = 0;            ///< this node's rank, 0..nnodes-1
  int nproc_per_node = 0;       ///< workers on this node; 0 means auto
  int gpus = 0;                 ///< GPUs requested per node (KTRAIN_GPUS)
  bool gpus_given = false;      ///< whether KTRAIN_GPUS was set at all
  std::string master_addr;      ///< where node 0's rendezvous listens
  int rdzv_port = 29400;        ///< node 0's rendezvous port
  int master_port = 29500;      ///< the framework's master/coordinator port
  double rdzv_timeout_s = 900;  ///< how long to wait for the whole world
  double grace_period_s = 25;   ///< SIGTERM -> SIGKILL grace for workers
  /// A worker with no output and no heartbeat for this long is hung (0 = no watchdog).
  double watchdog_timeout_s = 0;
  Framework framework = Framework::kNone;
  Preflight preflight = Preflight::kOff;
  std::string secret;  ///< per-run rendezvous secret (KTRAIN_RDZV_SECRET)
  /// `secret` comes from the Job's uid (KTRAIN_RDZV_JOB_UID): no Secret was there.
  bool secret_from_job_uid = false;
  std::string pod_ip;  ///< this node's address for endpoints (KTRAIN_POD_IP)
  std::string termination_log = "/dev/termination-log";
  double min_busbw_gbps = 0;  ///< KTRAIN_MIN_BUSBW: minimum all-reduce busbw (full preflight)
  std::string gpucheck_path;  ///< KTRAIN_GPUCHECK: the GPU helper; empty = next to the launcher
  /// KTRAIN_ELASTIC "min:max": elastic nodes; torchrun's elastic agent starts this
  /// node's workers and meets the others (c10d at master_addr:rdzv_port). 0 = fixed.
  int elastic_min = 0;
  int elastic_max = 0;
  int elastic_restarts = 0;           ///< KTRAIN_ELASTIC_RESTARTS: torchrun's --max-restarts
  std::string torchrun = "torchrun";  ///< KTRAIN_TORCHRUN: the elastic agent's program
  std::vector<std::string> command;   ///< the worker command and its arguments
  bool help = false;
  bool version = false;
  std::string install_dir;  ///< --install DIR: copy the launcher there and exit
  /// --latest-checkpoint: print the newest complete checkpoint in KTRAIN_CHECKPOINT_DIR
  /// (what `ktrain status` asks a running pod) and exit
  bool latest_checkpoint = false;
};

/// Parses flags (`args` excludes argv[0]) over the environment `env`. Throws
/// LaunchError(78) with a message naming the flag or variable on any problem.
/// With --help, --version, --install or --latest-checkpoint set, nothing else is validated.
Config parse_config(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env);

/// Returns the current process environment as a map.
std::map<std::string, std::string> environment_map();

/// Returns the --help text: usage, every flag and every variable.
std::string help_text();

}  // namespace ktrain::launch
