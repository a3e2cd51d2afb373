#include "runtime/launcher.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <memory>

#include "runtime/checkpoint.h"
#include "runtime/cuda_version.h"
#include "runtime/error.h"
#include "runtime/framework_env.h"
#include "runtime/gpu.h"
#include "runtime/peer_link.h"
#include "runtime/rendezvous.h"
#include "runtime/supervisor.h"
#include "runtime/termination_log.h"

namespace ktrain::launch {
namespace {

constexpr double kCountTimeoutS = 120;
constexpr double kQuickTimeoutS = 600;

struct GpuPlan {
  int gpus = 0;   ///< GPUs this node's workers share
  int nproc = 1;  ///< workers on this node
  std::string helper;
};

[[noreturn]] void preflight_error(const std::string& m) {
  throw LaunchError(exit_status::kPreflight, m);
}

using Env = std::map<std::string, std::string>;

// "node NAME" from KTRAIN_NODE_NAME (the Job sets it from spec.nodeName), else
// "host NAME" from the host name (in a pod, the pod's).
std::string node_label(const Env& env) {
  if (auto it = env.find("KTRAIN_NODE_NAME"); it != env.end() && !it->second.empty()) {
    return "node " + it->second;
  }
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "this node";
  return std::string("host ") + host;
}

// Refuses (exit 79) when the driver that `count` reported is older than the CUDA
// the image needs. Skipped, with a log line, when either is unknown.
void check_cuda_driver(const HelperResult& count, const Env& env) {
  auto fact = count.facts.find("driver_cuda");
  auto driver = fact == count.facts.end() ? std::nullopt : parse_driver_cuda(fact->second);
  if (!driver) {
    log_line("CUDA version check skipped: the GPU helper did not report the driver's CUDA version");
    return;
  }
  CudaNeed need = find_cuda_need(env, cudart_search_dirs(env));
  for (const auto& w : need.warnings) log_line(w);
  const std::string supports = driver_cuda_version(*driver).text();
  if (!need.version) {
    log_line("CUDA version check skipped: the driver supports CUDA " + supports +
             "; the image's CUDA version is unknown (no KTRAIN_CUDA_VERSION, CUDA_VERSION or "
             "libcudart.so.*)");
    return;
  }
  if (!driver_runs(*driver, *need.version)) {
    throw LaunchError(exit_status::kCudaDriver,
                      driver_too_old_message(node_label(env), *driver, need));
  }
  log_line("the driver supports CUDA " + supports + ", the image needs CUDA " +
           need.version->text() + " (" + need.source + ")");
}

// Counts the GPUs and, for quick/full, checks each one; decides the process count.
GpuPlan plan_gpus(const Config& c, const Env& env) {
  GpuPlan plan;
  plan.helper = find_gpucheck(c);
  const bool tf = c.framework == Framework::kTensorflow;
  int gpus = c.gpus;
  if (c.gpus > 0) {
    HelperResult r;
    if (!plan.helper.empty()) r = run_gpucheck(plan.helper, {"count"}, kCountTimeoutS, nullptr);
    if (r.unavailable) {
      log_line("GPU checks unavailable: " + r.error);
      plan.helper.clear();
    }
    if (plan.helper.empty() && !nvidia_device_present()) {
      preflight_error("KTRAIN_GPUS=" + std::to_string(c.gpus) +
                      " but no NVIDIA GPU or driver was found on this node (no /dev/nvidia*); "
                      "run on a GPU node or set gpus: 0");
    }
    if (plan.helper.empty()) {
      log_line(
          "GPU checks unavailable (no usable ktrain-gpucheck next to the launcher): "
          "assuming " +
          std::to_string(c.gpus) + " GPUs; CUDA version check skipped");
    } else {
      if (r.status != 0) {
        preflight_error("KTRAIN_GPUS=" + std::to_string(c.gpus) + " but " + r.error);
      }
      int found = std::atoi(r.facts["count"].c_str());
      if (found < c.gpus) {
        preflight_error("KTRAIN_GPUS=" + std::to_string(c.gpus) + " but only " +
                        std::to_string(found) + " GPU" + (found == 1 ? " is" : "s are") +
                        " visible on this node");
      }
      check_cuda_driver(r, env);
    }
  } else if (!c.gpus_given && c.nproc_per_node == 0 && nvidia_device_present() &&
             !plan.helper.empty()) {
    HelperResult r = run_gpucheck(plan.helper, {"count"}, kCountTimeoutS, nullptr);
    gpus = r.status == 0 ? std::atoi(r.facts["count"].c_str()) : 0;
    if (r.unavailable) plan.helper.clear();
    if (gpus > 0) check_cuda_driver(r, env);
  }
  plan.gpus = gpus;
  plan.nproc = c.nproc_per_node > 0 ? c.nproc_per_node : (gpus > 0 && !tf ? gpus : 1);
  if (gpus > 0 && gpus % plan.nproc != 0) {
    config_error(std::to_string(gpus) + " GPUs cannot be shared evenly by " +
                 std::to_string(plan.nproc) + " processes per node");
  }
  if (c.preflight != Preflight::kOff && gpus == 0) {
    log_line(std::string("GPU preflight '") + preflight_name(c.preflight) +
             "' skipped: no GPUs requested (KTRAIN_GPUS=0)");
  }
  if (c.preflight != Preflight::kOff && gpus > 0) {
    if (plan.helper.empty()) {
      log_line("GPU checks unavailable: no ktrain-gpucheck next to the launcher");
    } else {
      HelperResult r = run_gpucheck(plan.helper, {"quick", "--gpus", std::to_string(gpus)},
                                    kQuickTimeoutS, nullptr);
      for (const auto& line : r.info) log_line("preflight: " + line);
      if (r.status != 0) preflight_error(r.error);
    }
  }
  return plan;
}

/// A folder of this launcher's own for the workers' heartbeat files and the stop file
/// ($TMPDIR, else /tmp); "" when none can be made (then there are none: logged).
std::string make_state_dir(const std::map<std::string, std::string>& env) {
  std::string base = "/tmp";
  if (auto it = env.find("TMPDIR"); it != env.end() && !it->second.empty()) base = it->second;
  std::string tmpl = base + "/ktrain-launch.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    log_line(errno_message("no folder for the heartbeat and stop files in " + base) +
             ": KTRAIN_HEARTBEAT_FILE and KTRAIN_STOP_FILE are not set");
    return "";
  }
  return tmpl;
}

/// Removes the state folder when the launcher is done with it, however it ends.
struct StateDir {
  std::string path;
  ~StateDir() {
    if (path.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

/// The checkpoint to resume from, as the workers get it (KTRAIN_CHECKPOINT_LATEST), or "".
std::string checkpoint_to_resume(const std::map<std::string, std::string>& env) {
  auto it = env.find("KTRAIN_CHECKPOINT_DIR");
  if (it == env.end() || it->second.empty()) return "";
  const auto found = latest_checkpoint(it->second);
  if (!found) {
    log_line("no checkpoint in " + it->second + " yet: the workers start from the beginning");
    return "";
  }
  const long long age = static_cast<long long>(::time(nullptr)) - found->mtime_unix;
  log_line("the newest checkpoint is " + found->path + " (written " +
           std::to_string(age < 0 ? 0 : age) + "s ago): KTRAIN_CHECKPOINT_LATEST");
  return found->path;
}

int finish(const Config& c, int status, const std::string& cause, const std::string& tail_of = "",
           const std::vector<std::string>& tail = {}) {
  if (!cause.empty()) write_termination_log(c.termination_log, cause, tail_of, tail);
  return status;
}

/// Elastic nodes: torchrun's elastic agent is this node's one worker. It meets the
/// others at the c10d store on the first node (master_addr:rdzv_port), starts
/// plan.nproc processes with the environment it gives them, and starts them again
/// when a node leaves or joins; the launcher keeps the GPU checks, the stop file,
/// the watchdog, signals and the termination message around it.
int run_elastic(const Config& c, const std::map<std::string, std::string>& env,
                const GpuPlan& plan) {
  if (c.preflight == Preflight::kFull) {
    log_line(
        "full preflight: the NCCL check across nodes is skipped with elastic nodes (torchrun "
        "decides who takes part); this node's GPUs were checked");
  }
  if (find_on_path(c.torchrun, {}).empty()) {
    config_error("elastic nodes: cannot find '" + c.torchrun +
                 "' on PATH: the image needs PyTorch's torchrun (pip install torch puts it "
                 "there), or set KTRAIN_TORCHRUN");
  }
  const StateDir state{make_state_dir(env)};
  const std::string resume = checkpoint_to_resume(env);
  WorkerSpec w;
  w.rank = c.node_rank;
  w.name = "node " + std::to_string(c.node_rank);
  w.argv = {c.torchrun,
            "--nnodes=" + std::to_string(c.elastic_min) + ":" + std::to_string(c.elastic_max),
            "--nproc-per-node=" + std::to_string(plan.nproc),
            "--rdzv-backend=c10d",
            "--rdzv-endpoint=" + c.master_addr + ":" + std::to_string(c.rdzv_port),
            "--rdzv-id=" + c.run,
            "--max-restarts=" + std::to_string(c.elastic_restarts),
            "--no-python"};
  w.argv.insert(w.argv.end(), c.command.begin(), c.command.end());
  w.env.emplace_back("KTRAIN_NODE_RANK", std::to_string(c.node_rank));
  if (!state.path.empty()) {
    w.heartbeat_file = state.path + "/heartbeat." + std::to_string(c.node_rank);
    w.env.emplace_back("KTRAIN_HEARTBEAT_FILE", w.heartbeat_file);
    w.env.emplace_back("KTRAIN_STOP_FILE", state.path + "/stop");
  }
  if (!resume.empty()) w.env.emplace_back("KTRAIN_CHECKPOINT_LATEST", resume);
  log_line("elastic nodes " + std::to_string(c.elastic_min) + ".." + std::to_string(c.elastic_max) +
           ": " + c.torchrun + " starts " + std::to_string(plan.nproc) + " worker" +
           (plan.nproc == 1 ? "" : "s") + " here and meets the others at " + c.master_addr + ":" +
           std::to_string(c.rdzv_port));
  ProcessSpawner spawner;
  Supervisor supervisor(spawner, STDOUT_FILENO, c.grace_period_s, c.node_rank);
  supervisor.set_watchdog(c.watchdog_timeout_s);
  if (!state.path.empty()) supervisor.set_stop_file(state.path + "/stop");
  NoPeers peers;
  Outcome outcome = supervisor.run({std::move(w)}, peers);
  return finish(c, outcome.status, outcome.cause, outcome.tail_of, outcome.tail);
}

}  // namespace

int run_launcher(const Config& c, const std::map<std::string, std::string>& env) {
  install_early_signal_handling();
  std::unique_ptr<PeerLink> peers;
  std::unique_ptr<RendezvousServer> server;
  Connection to_node0;
  try {
    GpuPlan plan = plan_gpus(c, env);
    if (c.elastic_max > 0) return run_elastic(c, env, plan);
    const bool full = c.preflight == Preflight::kFull && plan.gpus > 0 && !plan.helper.empty();

    NodeInfo self;
    self.node_rank = c.node_rank;
    self.nnodes = c.nnodes;
    self.nproc = plan.nproc;
    self.framework = framework_name(c.framework);
    self.addr = c.pod_ip.empty() && c.nnodes == 1 ? "127.0.0.1" : c.pod_ip;

    World world;
    bool met = false;
    auto rendezvous = [&](const std::string& nccl_id) {
      if (c.nnodes == 1) {
        world = build_world(c.run, 1, {self}, c.master_port);
        world.nccl_id_hex = nccl_id;
        peers = std::make_unique<NoPeers>();
      } else if (c.node_rank == 0) {
        server = std::make_unique<RendezvousServer>(c, self);
        world = server->gather(nccl_id);
        peers = std::make_unique<ServerLink>(server->peers());
      } else {
        world = join_rendezvous(c, self, to_node0);
        peers = std::make_unique<ClientLink>(to_node0);
      }
      met = true;
      if (c.nnodes > 1) {
        const int first = world.first_rank(c.node_rank);
        log_line("node " + std::to_string(c.node_rank) + " of " + std::to_string(c.nnodes) +
                 ": ranks " + std::to_string(first) + ".." +
                 std::to_string(first + plan.nproc - 1) + " of " +
                 std::to_string(world.world_size()) + ", master " + world.master_addr + ":" +
                 std::to_string(world.master_port));
      }
    };

    if (!full) {
      rendezvous("");
    } else {
      // The full preflight: an NCCL communicator over every GPU of the job. The NCCL
      // unique id must come from the process that takes part as rank 0 (its
      // bootstrap root lives there), so node 0's helper makes it and prints it, and
      // node 0 sends it out with the world while that helper waits in NCCL.
      std::vector<std::string> args{"allreduce",
                                    "--nranks",
                                    std::to_string(plan.gpus * c.nnodes),
                                    "--first-rank",
                                    std::to_string(plan.gpus * c.node_rank),
                                    "--gpus",
                                    std::to_string(plan.gpus)};
      if (c.min_busbw_gbps > 0) {
        args.push_back("--min-busbw");
        args.push_back(std::to_string(c.min_busbw_gbps));
      }
      HelperResult r;
      auto link = [&]() -> PeerLink* { return peers.get(); };
      if (c.node_rank == 0) {
        args.push_back("--make-id");
        r = run_gpucheck(plan.helper, args, c.rdzv_timeout_s + 300, link,
                         [&](const std::string& key, const std::string& value) {
                           if (key == "nccl_id" && !met) rendezvous(value);
                         });
        if (!met) rendezvous("");  // the others still learn that this node failed
      } else {
        rendezvous("");
        if (world.nccl_id_hex.empty()) {
          log_line("full preflight skipped: node 0 did not provide an NCCL id");
        } else {
          args.push_back("--id");
          args.push_back(world.nccl_id_hex);
          r = run_gpucheck(plan.helper, args, c.rdzv_timeout_s + 300, link);
        }
      }
      for (const auto& line : r.info) log_line("preflight: " + line);
      if (!r.stopped_by_peer.empty()) {
        std::string cause = "stopped because of a peer: " + r.stopped_by_peer;
        log_line(cause);
        return finish(c, exit_status::kPeerFailed, cause);
      }
      if (r.status != 0) {
        std::string cause = "node " + std::to_string(c.node_rank) + ": " + r.error;
        peers->local_failed(cause);
        log_line(cause);
        return finish(c, exit_status::kPreflight, cause);
      }
    }
    const int first = world.first_rank(c.node_rank);
    const StateDir state{make_state_dir(env)};
    const std::string& state_dir = state.path;
    const std::string resume = checkpoint_to_resume(env);

    std::vector<WorkerSpec> workers;
    for (int i = 0; i < plan.nproc; ++i) {
      WorkerSpec w;
      w.rank = first + i;
      w.local_rank = i;
      w.argv = c.command;
      w.env = worker_env(world, WorkerPlace{c.node_rank, i, plan.gpus}, c.framework, env);
      auto set = [&w](const std::string& k, const std::string& v) {
        std::erase_if(w.env, [&k](const auto& kv) { return kv.first == k; });
        w.env.emplace_back(k, v);
      };
      if (!state_dir.empty()) {
        w.heartbeat_file = state_dir + "/heartbeat." + std::to_string(w.rank);
        set("KTRAIN_HEARTBEAT_FILE", w.heartbeat_file);
        set("KTRAIN_STOP_FILE", state_dir + "/stop");
      }
      if (!resume.empty()) set("KTRAIN_CHECKPOINT_LATEST", resume);
      workers.push_back(std::move(w));
    }
    ProcessSpawner spawner;
    Supervisor supervisor(spawner, STDOUT_FILENO, c.grace_period_s, c.node_rank);
    supervisor.set_watchdog(c.watchdog_timeout_s);
    if (!state_dir.empty()) supervisor.set_stop_file(state_dir + "/stop");
    Outcome outcome = supervisor.run(workers, *peers);
    return finish(c, outcome.status, outcome.cause, outcome.tail_of, outcome.tail);
  } catch (const LaunchError& e) {
    log_line(std::string("error: ") + e.what());
    if (peers) peers->local_failed("node " + std::to_string(c.node_rank) + ": " + e.what());
    return finish(c, e.status(), e.what());
  }
}

}  // namespace ktrain::launch
