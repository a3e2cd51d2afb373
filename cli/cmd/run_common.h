#pragma once
// What the run verbs (submit, list, status, logs, delete) share: choosing the
// backend, printing log lines, and waiting for runs to end.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cmd/command.h"

namespace ktrain::cmd {

/// --local: run on this machine instead of a cluster.
struct TargetFlags {
  bool local = false;
  /// Adds --local to `app`.
  void add_to(CLI::App& app);
};

/// Whether a cluster is configured: --kubeconfig, $KUBECONFIG, in a pod, or
/// ~/.kube/config.
bool cluster_configured(const Env& env);

/// The backend for a verb: local with --local, or when no cluster is configured
/// (no kubeconfig and not inside a pod), or when `run` names a local run; else the
/// cluster.
std::unique_ptr<backend::Backend> open_backend(Env& env, const TargetFlags& target,
                                               const std::string& run = "");

/// open_backend for the runs of a sweep: local when `sweep` names a sweep of local runs.
std::unique_ptr<backend::Backend> open_backend_for_sweep(Env& env, const TargetFlags& target,
                                                         const std::string& sweep);

/// Prints one log line: the launcher's "[rank N] ..." lines as they are, its own
/// lines prefixed "[node I] "; with the time in front when `timestamps`; the prefix
/// coloured per rank when env.color().
void print_log_line(Env& env, const backend::LogLine& line, bool timestamps,
                    const std::string& run_prefix = "");

/// Streams `run`'s logs into `sink` with the lines of different nodes in timestamp
/// order: within a short window when following (backend::OrderedLogSink), the whole
/// log sorted otherwise. Output is flushed after each batch when following.
void logs_in_order(Env& env, backend::Backend& be, const std::string& run, backend::LogOptions opts,
                   const backend::LogSink& sink);

/// While it lives, SIGINT and SIGTERM ask the command to stop instead of killing it,
/// so that it can print what it holds (the lines of `logs -f` still in the ordering
/// window, or not yet flushed) and exit 128 + the signal's number itself. A second
/// signal kills as usual. One at a time.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  /// The signal received since construction; 0 when none.
  static int received();
};

/// Starts the runs of a sweep that wait for a place (train.sweep.parallel) as others
/// end, so that at most `parallel` of `runs` are pending or running at once, in order;
/// returns when every run has been started or `stop` says so. Says on stderr what it
/// starts.
void release_sweep(Env& env, backend::Backend& be, const std::string& sweep,
                   const std::vector<std::string>& runs, int parallel,
                   const std::function<bool()>& stop);

/// Waits until every run in `runs` has ended (optionally following their logs),
/// then returns 0 when all succeeded and 1 when one failed, after printing which
/// rank failed first, why, and the last lines of its log. Returns 124 when
/// `timeout` passes first.
/// `abort`, polled while waiting, ends the wait early (exit 1) when it says so.
/// `on_end`, when set, is called with each run's status once it has ended (not on a
/// timeout, an interruption or an abort: the run goes on).
int wait_for_runs(Env& env, backend::Backend& backend, const std::vector<std::string>& runs,
                  std::optional<std::chrono::seconds> timeout, bool follow,
                  const std::function<bool()>& abort = nullptr,
                  const std::function<void(const backend::RunStatus&)>& on_end = nullptr);

/// Parses a --timeout value ("90s", "10m", "2h"); throws UsageError.
std::chrono::seconds parse_timeout_flag(const std::string& flag, const std::string& value);

/// JSON of a run summary / status, with stable field names for scripts.
/// Prints `doc` as indented JSON (`format` "json") or as one YAML document ("yaml").
void print_document(Env& env, const nlohmann::ordered_json& doc, const std::string& format);

nlohmann::ordered_json to_json(const backend::RunSummary& s,
                               std::chrono::system_clock::time_point now);
nlohmann::ordered_json to_json(const backend::RunStatus& s,
                               std::chrono::system_clock::time_point now);

}  // namespace ktrain::cmd
