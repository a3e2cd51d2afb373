#pragma once
// LocalBackend: runs a project's nodes as ktrain-launch processes on this machine
// (rank 0 on 127.0.0.1, free ports), detached, under a keeper process that keeps
// the run's state (local_run.h). The embedded default when there is no cluster.

#include <string>

#include "backend/backend.h"
#include "backend/local_run.h"
#include "base/env.h"

namespace ktrain::backend {

/// Where LocalBackend finds its programs.
struct LocalPrograms {
  std::string ktrain;    ///< this program (the keeper runs as `ktrain __keeper DIR`)
  std::string launcher;  ///< ktrain-launch
};

/// The programs beside the running ktrain binary ($KTRAIN_LAUNCH_PATH overrides the
/// launcher); throws Error when ktrain-launch cannot be found.
LocalPrograms find_local_programs(const Env& env);

/// Runs jobs on this machine.
class LocalBackend : public Backend {
 public:
  LocalBackend(Env& env, LocalPrograms programs);

  SubmitResult submit(const project::Project& project, const SubmitOptions& opts) override;
  std::vector<RunSummary> list(const ListFilter& filter) override;
  std::vector<SweepRun> sweep_runs(const std::string& sweep) override;
  bool stop(const std::string& run) override;
  bool resume(const std::string& run) override;
  void watch_list(const ListFilter& filter,
                  const std::function<bool(const std::vector<RunSummary>&)>& on_change,
                  const std::function<bool()>& cancelled) override;
  RunStatus status(const std::string& run) override;
  void logs(const std::string& run, const LogOptions& opts, const LogSink& sink) override;
  void remove(const std::string& run) override;
  /// Polls status() five times a second (the keeper updates the run's files).
  void watch_status(const std::string& run, const StatusCallback& on_change,
                    const std::function<bool()>& cancelled) override;

  /// Runs serve.command as one process on this machine, under a keeper as a run's
  /// nodes are (listed, followed and deleted as a run, of kind serve), and with
  /// opts.wait polls http://127.0.0.1:PORT until it answers (the readiness path with 2xx
  /// or 3xx). A service of that name that runs is left as it is.
  ServeResult serve(const project::Project& project, const ServeOptions& opts) override;
  /// A local service has one process: UsageError.
  ScaleResult scale(const ScaleRequest& req) override;
  /// {"server": "local: HOST (ktrain-launch's path)"}.
  nlohmann::ordered_json server_version() override;

  /// Whether a local run with this name exists.
  bool has_run(const std::string& run) const;

 private:
  std::string run_dir(const std::string& run) const;
  /// Starts `run`'s keeper; when that fails, records the run as failed and rethrows.
  void start_keeper(const std::string& dir, LocalRun& run);

  Env& env_;
  LocalPrograms programs_;
  std::string root_;
};

}  // namespace ktrain::backend
