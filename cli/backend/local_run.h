#pragma once
// The state of one local run, kept under the state folder
// ($XDG_STATE_HOME/ktrain/runs/<run>/, else ~/.local/state/ktrain/runs/<run>/):
//   run.json          this record, rewritten atomically by the run's keeper
//   secret            the rendezvous secret (mode 0600)
//   node-<i>.log      node i's output, one "<RFC 3339 time> <line>" per line
//   node-<i>.cause    node i's one-line termination cause, when it wrote one
//   keeper.log        the keeper's own messages

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/env.h"
#include "project/project.h"

namespace ktrain::backend {

/// One node (one ktrain-launch process) of a local run.
struct LocalNode {
  int index = 0;
  int pid = 0;
  std::optional<int> exit_code;  ///< when it exited
  std::optional<int> signal;     ///< when a signal killed it
  std::string started;           ///< RFC 3339
  std::string finished;          ///< RFC 3339
  std::string cause;             ///< one line: "rank 3 exited 1"
};

/// run.json.
struct LocalRun {
  std::string name;
  std::string kind = "train";  ///< "train", or "serve": a service's one process (serve --local)
  int port = 0;                ///< a service's serve.port
  std::string sweep;           ///< the sweep's base name, "" when not part of a sweep
  std::string project;
  std::map<std::string, std::string> labels;  ///< as a cluster run's Job has them
  std::string directory;                      ///< where the command runs (the project's folder)
  std::string launcher;                       ///< path of ktrain-launch
  std::vector<std::string> command;
  project::StringPairs env;  ///< user env, KTRAIN_PARAM_*, framework, preflight...
  std::string framework;
  std::string preflight;
  int nodes = 1;
  int nproc = 1;  ///< workers per node
  int gpus = 0;
  int grace_s = 30;             ///< from SIGTERM to SIGKILL when stopped (train.gracePeriod)
  bool queued = false;          ///< waits for a place in its sweep (train.sweep.parallel)
  project::StringPairs params;  ///< its sweep combination, in file order
  std::string created;          ///< RFC 3339
  RunState state = RunState::kPending;
  int keeper_pid = 0;
  std::string reason;     ///< why it failed, one line
  int first_failed = -1;  ///< the node that failed first
  std::vector<LocalNode> node_status;
};

/// nlohmann::json <-> LocalRun.
nlohmann::json to_json(const LocalRun& run);
LocalRun local_run_from_json(const nlohmann::json& j);

/// The folder that holds every local run ($XDG_STATE_HOME/ktrain/runs or
/// ~/.local/state/ktrain/runs).
std::string local_runs_root(const Env& env);

/// Reads <dir>/run.json; throws Error when missing or unreadable.
LocalRun read_local_run(const std::string& dir);

/// Writes <dir>/run.json atomically.
void write_local_run(const std::string& dir, const LocalRun& run);

/// The keeper of a local run: starts its nodes as ktrain-launch processes,
/// timestamps their output into node-<i>.log, records exit statuses, and stops
/// them on SIGTERM. Runs detached (see LocalBackend::submit); returns its exit status.
int run_local_keeper(const std::string& run_dir);

}  // namespace ktrain::backend
