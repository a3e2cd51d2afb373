#include "runtime/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "runtime/cuda_version.h"
#include "runtime/error.h"

extern char** environ;

namespace ktrain::launch {
namespace {

using Env = std::map<std::string, std::string>;

const std::string* lookup(const Env& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return nullptr;
  return &it->second;
}

long parse_long(const std::string& text, const std::string& where, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) {
    config_error(where + ": '" + text + "' is not a whole number");
  }
  if (v < lo || v > hi) {
    config_error(where + ": " + text + " is out of range (" + std::to_string(lo) + ".." +
                 std::to_string(hi) + ")");
  }
  return v;
}

double parse_seconds(const std::string& text, const std::string& where, bool allow_zero) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
    config_error(where + ": '" + text + "' is not a number of seconds");
  }
  if (v < 0 || (!allow_zero && v == 0)) {
    config_error(where + ": " + text + " must be " + (allow_zero ? "at least 0" : "more than 0"));
  }
  return v;
}

Framework parse_framework(const std::string& text, const std::string& where) {
  if (text == "pytorch") return Framework::kPytorch;
  if (text == "paddle") return Framework::kPaddle;
  if (text == "tensorflow") return Framework::kTensorflow;
  if (text == "jax") return Framework::kJax;
  if (text == "none") return Framework::kNone;
  config_error(where + ": unknown framework '" + text +
               "' (expected pytorch, paddle, tensorflow, jax or none)");
}

Preflight parse_preflight(const std::string& text, const std::string& where) {
  if (text == "off") return Preflight::kOff;
  if (text == "quick") return Preflight::kQuick;
  if (text == "full") return Preflight::kFull;
  config_error(where + ": unknown preflight level '" + text + "' (expected off, quick or full)");
}

int parse_nproc(const std::string& text, const std::string& where) {
  if (text == "auto") return 0;
  return static_cast<int>(parse_long(text, where, 1, 4096));
}

// The flags that take a value, with the variable each one overrides.
struct FlagSpec {
  const char* flag;
  const char* variable;
};
constexpr FlagSpec kValueFlags[] = {
    {"--nnodes", "KTRAIN_NNODES"},
    {"--node-rank", "KTRAIN_NODE_RANK"},
    {"--nproc-per-node", "KTRAIN_NPROC_PER_NODE"},
    {"--master-addr", "KTRAIN_MASTER_ADDR"},
    {"--rdzv-port", "KTRAIN_RDZV_PORT"},
    {"--master-port", "KTRAIN_MASTER_PORT"},
    {"--framework", "KTRAIN_FRAMEWORK"},
    {"--preflight", "KTRAIN_PREFLIGHT"},
    {"--rdzv-timeout", "KTRAIN_RDZV_TIMEOUT"},
    {"--grace-period", "KTRAIN_GRACE_PERIOD"},
    {"--watchdog-timeout", "KTRAIN_WATCHDOG_TIMEOUT"},
};

}  // namespace

const char* framework_name(Framework f) {
  switch (f) {
    case Framework::kPytorch:
      return "pytorch";
    case Framework::kPaddle:
      return "paddle";
    case Framework::kTensorflow:
      return "tensorflow";
    case Framework::kJax:
      return "jax";
    case Framework::kNone:
      break;
  }
  return "none";
}

const char* preflight_name(Preflight p) {
  switch (p) {
    case Preflight::kQuick:
      return "quick";
    case Preflight::kFull:
      return "full";
    case Preflight::kOff:
      break;
  }
  return "off";
}

Config parse_config(const std::vector<std::string>& args, const Env& env) {
  Config c;
  // Flags first: each value flag is stored under its variable's name, so that
  // "flag, else variable" is one lookup below.
  Env given;                                 // variable name -> value from a flag
  std::map<std::string, std::string> where;  // variable name -> how it was given
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      c.help = true;
      return c;
    }
    if (a == "--version") {
      c.version = true;
      return c;
    }
    if (a == "--latest-checkpoint") {
      c.latest_checkpoint = true;
      return c;
    }
    if (a == "--install" || a.rfind("--install=", 0) == 0) {
      if (a == "--install") {
        if (i + 1 >= args.size()) config_error("--install needs a folder");
        c.install_dir = args[i + 1];
      } else {
        c.install_dir = a.substr(10);
      }
      if (c.install_dir.empty()) config_error("--install needs a folder");
      return c;
    }
    if (a.rfind("--", 0) != 0) break;  // the command starts without "--"
    std::string name = a, value;
    bool inline_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    const FlagSpec* spec = nullptr;
    for (const auto& f : kValueFlags) {
      if (name == f.flag) spec = &f;
    }
    if (!spec) config_error("unknown flag '" + name + "' (see ktrain-launch --help)");
    if (!inline_value) {
      if (i + 1 >= args.size()) config_error(name + " needs a value");
      value = args[++i];
    }
    given[spec->variable] = value;
    where[spec->variable] = name;
  }
  c.command.assign(args.begin() + static_cast<long>(i), args.end());

  // value(var): the flag's value, else the variable's; `origin` says which.
  auto value = [&](const std::string& var, std::string& origin) -> const std::string* {
    if (auto it = given.find(var); it != given.end()) {
      origin = where[var];
      return &it->second;
    }
    origin = var;
    return lookup(env, var);
  };
  std::string origin;

  if (auto* v = lookup(env, "KTRAIN_RUN")) c.run = *v;
  if (auto* v = lookup(env, "KTRAIN_ELASTIC")) {
    const auto colon = v->find(':');
    if (colon == std::string::npos) {
      config_error("KTRAIN_ELASTIC: '" + *v + "' is not min:max (like 2:8)");
    }
    c.elastic_min =
        static_cast<int>(parse_long(v->substr(0, colon), "KTRAIN_ELASTIC's min", 1, 100000));
    c.elastic_max =
        static_cast<int>(parse_long(v->substr(colon + 1), "KTRAIN_ELASTIC's max", 1, 100000));
    if (c.elastic_min > c.elastic_max) {
      config_error("KTRAIN_ELASTIC: the fewest nodes (" + std::to_string(c.elastic_min) +
                   ") are more than the most (" + std::to_string(c.elastic_max) + ")");
    }
    if (auto* r = lookup(env, "KTRAIN_ELASTIC_RESTARTS")) {
      c.elastic_restarts = static_cast<int>(parse_long(*r, "KTRAIN_ELASTIC_RESTARTS", 0, 100000));
    }
    if (auto* t = lookup(env, "KTRAIN_TORCHRUN")) c.torchrun = *t;
  }
  const bool elastic = c.elastic_max > 0;
  if (auto* v = value("KTRAIN_NNODES", origin)) {
    c.nnodes = static_cast<int>(parse_long(*v, origin, 1, 100000));
  }
  if (elastic) c.nnodes = c.elastic_max;
  if (auto* v = value("KTRAIN_NODE_RANK", origin)) {
    c.node_rank = static_cast<int>(parse_long(*v, origin, 0, 100000));
  } else if (auto* j = lookup(env, "JOB_COMPLETION_INDEX")) {
    c.node_rank = static_cast<int>(parse_long(*j, "JOB_COMPLETION_INDEX", 0, 100000));
  } else if (c.nnodes > 1 && !elastic) {
    config_error(
        "the node rank is not set: set KTRAIN_NODE_RANK or JOB_COMPLETION_INDEX, or "
        "pass --node-rank (KTRAIN_NNODES is " +
        std::to_string(c.nnodes) + ")");
  }
  // An operator numbers some replicas apart (a PyTorchJob's Master is 0, its Workers
  // 0..n-2): the Worker's pods add 1 to their index.
  if (auto* v = lookup(env, "KTRAIN_NODE_RANK_OFFSET")) {
    c.node_rank += static_cast<int>(parse_long(*v, "KTRAIN_NODE_RANK_OFFSET", 0, 100000));
  }
  if (c.node_rank >= c.nnodes) {
    config_error("node rank " + std::to_string(c.node_rank) + " is not below the node count " +
                 std::to_string(c.nnodes));
  }
  if (auto* v = lookup(env, "KTRAIN_GPUS")) {
    c.gpus = static_cast<int>(parse_long(*v, "KTRAIN_GPUS", 0, 4096));
    c.gpus_given = true;
  }
  if (auto* v = value("KTRAIN_NPROC_PER_NODE", origin)) c.nproc_per_node = parse_nproc(*v, origin);
  if (auto* v = value("KTRAIN_FRAMEWORK", origin)) c.framework = parse_framework(*v, origin);
  if (auto* v = value("KTRAIN_PREFLIGHT", origin)) c.preflight = parse_preflight(*v, origin);
  if (auto* v = value("KTRAIN_MASTER_ADDR", origin)) {
    c.master_addr = *v;
  } else if (c.nnodes == 1) {
    c.master_addr = "127.0.0.1";
  } else {
    config_error(
        "the rendezvous address is not set: set KTRAIN_MASTER_ADDR or pass "
        "--master-addr (node 0's address, e.g. <run>-0.<run>)");
  }
  if (auto* v = value("KTRAIN_RDZV_PORT", origin)) {
    c.rdzv_port = static_cast<int>(parse_long(*v, origin, 1, 65535));
  }
  if (auto* v = value("KTRAIN_MASTER_PORT", origin)) {
    c.master_port = static_cast<int>(parse_long(*v, origin, 1, 65535));
  }
  if (auto* v = value("KTRAIN_RDZV_TIMEOUT", origin)) {
    c.rdzv_timeout_s = parse_seconds(*v, origin, false);
  }
  if (auto* v = value("KTRAIN_GRACE_PERIOD", origin)) {
    c.grace_period_s = parse_seconds(*v, origin, true);
  }
  if (auto* v = value("KTRAIN_WATCHDOG_TIMEOUT", origin)) {
    c.watchdog_timeout_s = parse_seconds(*v, origin, true);
  }
  if (auto* v = lookup(env, "KTRAIN_RDZV_SECRET")) c.secret = *v;
  // Without the Secret (its manifests applied as rendered, with no secret in them), a
  // Job's pods key the rendezvous on their Job's uid: the same in every rank of the run,
  // new for each run, and known only to who can read the namespace's pods.
  if (auto* v = lookup(env, "KTRAIN_RDZV_JOB_UID"); v && !v->empty() && c.secret.empty()) {
    c.secret = "job-uid:" + *v;
    c.secret_from_job_uid = true;
  }
  if (auto* v = lookup(env, "KTRAIN_POD_IP")) c.pod_ip = *v;
  if (auto* v = lookup(env, "KTRAIN_TERMINATION_LOG")) c.termination_log = *v;
  if (auto* v = lookup(env, "KTRAIN_GPUCHECK")) c.gpucheck_path = *v;
  // Read again, with CUDA_VERSION and the image's libraries, when GPUs are used
  // (find_cuda_need); a bad value is a configuration error for every job.
  if (auto* v = lookup(env, "KTRAIN_CUDA_VERSION")) parse_cuda_setting("KTRAIN_CUDA_VERSION", *v);
  if (auto* v = lookup(env, "KTRAIN_MIN_BUSBW")) {
    c.min_busbw_gbps = parse_seconds(*v, "KTRAIN_MIN_BUSBW", true);
  }

  if (elastic && c.framework != Framework::kPytorch) {
    config_error(std::string("KTRAIN_ELASTIC: elastic nodes are torchrun's, for framework pytorch; "
                             "the framework is ") +
                 framework_name(c.framework));
  }
  // Elastic nodes meet at torchrun's c10d store, not at the launcher's rendezvous.
  if (c.nnodes > 1 && c.secret.empty() && !elastic) {
    config_error(
        "KTRAIN_RDZV_SECRET is not set: a multi-node rendezvous needs the per-run "
        "secret (the pods read it from the Secret <run>-rdzv, which ktrain submit creates) "
        "or, in a Job's pods, the Job's uid (KTRAIN_RDZV_JOB_UID)");
  }
  if (c.nnodes > 1 && c.master_port == c.rdzv_port) {
    config_error("the master port and the rendezvous port are both " + std::to_string(c.rdzv_port) +
                 ": they must differ");
  }
  if (c.gpus > 0 && c.nproc_per_node > c.gpus) {
    config_error(std::to_string(c.nproc_per_node) + " processes per node but only " +
                 std::to_string(c.gpus) + " GPUs per node: at most one process per GPU");
  }
  if (c.gpus > 0 && c.nproc_per_node > 0 && c.gpus % c.nproc_per_node != 0) {
    config_error(std::to_string(c.gpus) + " GPUs cannot be shared evenly by " +
                 std::to_string(c.nproc_per_node) + " processes per node");
  }
  if (c.command.empty()) {
    config_error("no command to run: usage: ktrain-launch [options] -- COMMAND [ARGS...]");
  }
  return c;
}

Env environment_map() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

std::string help_text() {
  return R"(usage: ktrain-launch [options] -- COMMAND [ARGS...]

Starts COMMAND once per process on this node after a rendezvous with the other
nodes, with the environment of the chosen framework's own launcher, and
supervises the workers (signals, orphans, fail-fast, output prefixed by rank).

options (each overrides the variable named after it):
  --nnodes N              number of nodes                        KTRAIN_NNODES (1)
  --node-rank R           this node's rank                       KTRAIN_NODE_RANK, else
                                                                 JOB_COMPLETION_INDEX
  --nproc-per-node N|auto workers on this node; auto = GPUs found, KTRAIN_NPROC_PER_NODE (auto)
                          1 without GPUs (tensorflow: 1)
  --master-addr A         node 0's rendezvous address            KTRAIN_MASTER_ADDR
  --rdzv-port P           node 0's rendezvous TCP port           KTRAIN_RDZV_PORT (29400)
  --master-port P         the framework's master port            KTRAIN_MASTER_PORT (29500)
  --framework F           pytorch|paddle|tensorflow|jax|none     KTRAIN_FRAMEWORK (none)
  --preflight L           off|quick|full GPU/NCCL checks         KTRAIN_PREFLIGHT (off)
  --rdzv-timeout S        seconds to wait for every node         KTRAIN_RDZV_TIMEOUT (900)
  --grace-period S        SIGTERM -> SIGKILL grace in seconds    KTRAIN_GRACE_PERIOD (25)
  --watchdog-timeout S    a worker with no output and no         KTRAIN_WATCHDOG_TIMEOUT
                          heartbeat for S seconds is hung: its   (0: no watchdog)
                          state is dumped, the node ends with 74
  --install DIR           copy ktrain-launch (and ktrain-gpucheck beside it) into
                          DIR and exit: the init container of pods whose image
                          lacks the launcher runs this
  --latest-checkpoint     print the newest complete checkpoint in KTRAIN_CHECKPOINT_DIR
                          as one line, "<written, seconds since the epoch> <path>"
                          (nothing when there is none yet) and exit; 78 when the
                          variable is not set. `ktrain status` runs this in a pod
  --help                  this text
  --version               the version

other variables:
  KTRAIN_RUN              run name (TORCHELASTIC_RUN_ID)
  KTRAIN_GPUS             GPUs per node; fewer visible is an error (77); 0 skips GPU checks
  KTRAIN_RDZV_SECRET      per-run secret for the rendezvous challenge-response (nodes > 1)
  KTRAIN_RDZV_JOB_UID     without KTRAIN_RDZV_SECRET: the Job's uid keys the rendezvous
  KTRAIN_POD_IP           this node's address for worker endpoints
  KTRAIN_MIN_BUSBW        minimum all-reduce busbw in GB/s for the full preflight
  KTRAIN_TERMINATION_LOG  where the one-line cause goes (/dev/termination-log)
  KTRAIN_GPUCHECK         the GPU helper (default: ktrain-gpucheck next to the launcher)
  KTRAIN_CUDA_VERSION     the CUDA version the image needs (e.g. 12.1); else CUDA_VERSION,
                          else the newest libcudart.so.* found; a driver too old for it: 79
  KTRAIN_NODE_NAME        the Kubernetes node's name, for messages (default: the host name)
  JOB_COMPLETION_INDEX    node rank when KTRAIN_NODE_RANK is not set
  KTRAIN_NODE_RANK_OFFSET added to the node rank (a PyTorchJob's Workers: 1)
  KTRAIN_ELASTIC          min:max elastic nodes (framework pytorch): torchrun's elastic
                          agent starts this node's workers (--nnodes min:max, c10d
                          rendezvous at --master-addr:--rdzv-port, --no-python COMMAND)
                          and starts them again when a node leaves or joins
  KTRAIN_ELASTIC_RESTARTS torchrun's --max-restarts after a worker fails (0)
  KTRAIN_TORCHRUN         the elastic agent's program (torchrun)
  KTRAIN_PARAM_<NAME>     sweep parameters, passed to workers unchanged
  KTRAIN_CHECKPOINT_DIR   the checkpoint folder: its newest complete checkpoint goes to
                          the workers as KTRAIN_CHECKPOINT_LATEST

to each worker: KTRAIN_STOP_FILE (made when the node is being stopped: save a
checkpoint), KTRAIN_HEARTBEAT_FILE (touch it to tell the watchdog the worker
progresses), KTRAIN_CHECKPOINT_LATEST (where there is a checkpoint to resume).

exit status: the failing worker's own status (128+signal when killed), 0 on
success, 74 a worker hung (the watchdog), 75 stopped because a peer failed,
76 rendezvous failed, 77 GPU/NCCL preflight failed, 78 configuration error,
79 the node's NVIDIA driver is too old for the image's CUDA; 128+signal when
stopped by a signal.
)";
}

}  // namespace ktrain::launch
