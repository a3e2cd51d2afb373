#pragma once
// Supervises the workers of one node: one process group each, their output
// prefixed by rank, signals forwarded, orphans reaped, and fail-fast: the first
// worker that fails stops the others here and, through the PeerLink, everywhere.

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/line_prefixer.h"
#include "runtime/peer_link.h"
#include "runtime/spawner.h"

namespace ktrain::launch {

/// One worker to start.
struct WorkerSpec {
  int rank = 0;  ///< global rank, used in the output prefix and causes
  int local_rank = 0;
  /// Who it is in the output prefix and causes, when not "rank <rank>" (elastic nodes:
  /// "node 1", torchrun's agent for the node's ranks).
  std::string name;
  std::string who() const { return name.empty() ? "rank " + std::to_string(rank) : name; }
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  /// The file the worker touches to show progress (KTRAIN_HEARTBEAT_FILE; "" = none).
  std::string heartbeat_file;
};

/// How the node ended: the launcher's exit status and the one-line cause
/// (empty when every worker exited 0).
struct Outcome {
  int status = 0;
  std::string cause;
  /// When a worker's exit ended the node: "rank R" and its last output lines.
  std::string tail_of;
  std::vector<std::string> tail;
};

/// The signals forwarded to every worker group.
inline constexpr int kForwardedSignals[] = {1 /*HUP*/, 2 /*INT*/, 15 /*TERM*/, 10 /*USR1*/,
                                            12 /*USR2*/};

/// Installs the launcher's early signal handling (before workers exist): a stop
/// signal ends the launcher at once with 128+signal, after killing the process
/// group registered with set_helper_group(). Also makes the launcher a child
/// subreaper when it is not PID 1, so that orphaned grandchildren are its to reap.
void install_early_signal_handling();

/// Registers the process group of a helper child to kill on an early stop signal
/// (0: none).
void set_helper_group(pid_t pgid);

/// Runs the workers of one node until they are done.
class Supervisor {
 public:
  /// `output_fd` receives the prefixed worker output; `grace_s` is the time from
  /// SIGTERM to SIGKILL; `node_rank` names this node in messages to peers.
  Supervisor(Spawner& spawner, int output_fd, double grace_s, int node_rank);

  /// Starts the workers and supervises them; returns when they have all exited
  /// and, on node 0, every node has reported (or a failure ended the job).
  Outcome run(const std::vector<WorkerSpec>& workers, PeerLink& peers);

  /// The hang watchdog: a worker with no output and no touch of its heartbeat file
  /// for `timeout_s` (from its start) is hung. Its state is logged (the process's
  /// state and kernel wait, py-spy's stacks where py-spy is on PATH, its NCCL_*
  /// variables), and the node ends with kHung (74), the others told. 0: off.
  void set_watchdog(double timeout_s) { watchdog_s_ = timeout_s; }

  /// The file made (with one line: why, and when SIGKILL comes) when the node starts
  /// stopping, for workers that look for it between steps (KTRAIN_STOP_FILE). "" = none.
  void set_stop_file(const std::string& path) { stop_file_ = path; }

 private:
  Spawner& spawner_;
  int output_fd_;
  double grace_s_;
  int node_rank_;
  double watchdog_s_ = 0;
  std::string stop_file_;
};

}  // namespace ktrain::launch
