#pragma once
// The one interface the run verbs use (submit, list, status, logs, delete): a
// verb is written once for both backends. KubeBackend (backend/kube_backend.h)
// speaks REST to the API server; LocalBackend (backend/local_backend.h) runs the
// job's nodes as ktrain-launch processes on this machine.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/run_status.h"
#include "base/selector.h"
#include "project/project.h"

namespace ktrain::backend {

// The run-state types live in base/run_status.h (kube/run_state makes them too).
using ::ktrain::RankStatus;
using ::ktrain::RunState;
using ::ktrain::RunStatus;
using ::ktrain::RunSummary;
using ::ktrain::status_fingerprint;
using ::ktrain::to_string;

/// One run of a sweep, as `ktrain status SWEEP` shows it.
struct SweepRun {
  RunSummary summary;
  project::StringPairs params;  ///< its combination, in file order
  std::optional<std::chrono::system_clock::time_point> started;
  std::optional<std::chrono::system_clock::time_point> finished;
  /// Succeeded: 0; Failed: the exit code of the node that failed first (when known).
  std::optional<int> exit_code;
};

/// Which runs `list` returns.
struct ListFilter {
  bool all_namespaces = false;
  LabelSelector selector;  ///< -l: only runs whose labels match
  std::string sweep;       ///< --sweep: only the runs of this sweep
};

/// Options of `ktrain submit`.
struct SubmitOptions {
  std::string run_id;           ///< "" = a fresh random id
  bool dry_run_server = false;  ///< cluster only: ask the server to validate without persisting
  /// Hears how many of how many objects (local: runs) have been sent so far.
  std::function<void(std::size_t done, std::size_t total)> progress;
};

/// What submit made.
struct SubmitResult {
  std::vector<std::string> runs;     ///< run names (several for a sweep)
  std::vector<std::string> objects;  ///< "job.batch/NAME" etc., for -o name
};

/// Options of `ktrain logs`.
struct LogOptions {
  bool follow = false;
  std::optional<int> rank;  ///< only this global worker rank (lines "[rank N] ...")
  std::optional<int> node;  ///< only this node (pod index)
  std::optional<std::chrono::system_clock::time_point> since;
  std::optional<int> tail;
  bool timestamps = false;
  bool previous = false;
  std::string container;
  /// Polled while following (at least every 100 ms); true stops it (a --timeout).
  std::function<bool()> cancelled;
  /// Called while following with what a pod of node `node` waits for each time the
  /// cluster says something of it: the kubelet's waiting reason and message of its
  /// container or of an init container ("" when nothing holds it), so that a caller can
  /// give up on an image that cannot be pulled. May be called from another thread.
  std::function<void(int node, const std::string& reason, const std::string& message)> on_waiting;
  /// Called while following whenever the lines received so far have gone to the sink
  /// (after each chunk read from a stream), so that output can be flushed then rather
  /// than after every line.
  std::function<void()> flush;
};

/// One line of a run's log.
struct LogLine {
  int rank = 0;           ///< the node (pod index) the line came from
  std::string text;       ///< without the trailing newline
  std::string timestamp;  ///< RFC 3339 with nanoseconds, when known
  /// Not a line of the log but ktrain's word about it ("node 3 restarted, attempt 2
  /// (pod ...)", "pod ... was deleted: its log ends here"); printed on stderr.
  bool notice = false;
};

/// Where log lines go; returns false to stop. Called from one thread at a time.
using LogSink = std::function<bool(const LogLine&)>;

/// Called with a run's status; returns false to stop watching.
using StatusCallback = std::function<bool(const RunStatus&)>;

/// Options of `ktrain serve`.
struct ServeOptions {
  bool wait = true;  ///< until the service is ready (else: applied, and back)
  std::chrono::seconds timeout{600};
  bool dry_run_server = false;  ///< cluster only: validated by the server, nothing kept
  /// Hears what the wait is waiting for, each time that changes.
  std::function<void(const std::string&)> progress;
};

/// What `serve` did.
struct ServeResult {
  std::vector<std::string> objects;  ///< "deployment.apps/NAME"... (-o name)
  bool waited = false;               ///< it waited (opts.wait, not a dry run)
  bool ready = false;                ///< it waited and the service is ready
  /// Ready: how it stands ("rolled out, 2 replicas available"); not ready after the
  /// timeout: what it was waiting for.
  std::string message;
};

/// What `ktrain scale` was asked to do.
struct ScaleRequest {
  std::string name;  ///< the serve name (its Deployment, InferenceService, LeaderWorkerSet)
  std::optional<int> replicas;
  std::optional<int> min;
  std::optional<int> max;
};

/// What `scale` changed, one line each ("deployment.apps/web scaled"), and what the
/// user should know (an autoscaler that will change the replicas again).
struct ScaleResult {
  std::vector<std::string> changed;
  std::vector<std::string> warnings;
};

/// Runs jobs somewhere. Abstract; the verbs hold a Backend&.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Starts the project's training job (one run per sweep combination).
  virtual SubmitResult submit(const project::Project& project, const SubmitOptions& opts) = 0;
  /// The runs this backend knows that pass `filter`, newest first.
  virtual std::vector<RunSummary> list(const ListFilter& filter) = 0;
  /// Calls `on_change` with list(filter) now and whenever a run is added, removed or
  /// changes, until `on_change` returns false or `cancelled` says stop.
  virtual void watch_list(const ListFilter& filter,
                          const std::function<bool(const std::vector<RunSummary>&)>& on_change,
                          const std::function<bool()>& cancelled) = 0;
  /// The status of one run; throws Error (exit 1) "run X not found" when unknown.
  virtual RunStatus status(const std::string& run) = 0;
  /// Fills st.checkpoint (or st.checkpoint_note) where status() could not, from the
  /// status() it made: a cluster run's checkpoint volume is read through one of its
  /// running pods (one more round trip, which only `ktrain status` takes).
  virtual void read_checkpoint(RunStatus& st) { (void)st; }
  /// Streams the run's logs into `sink` (until the run ends when following).
  virtual void logs(const std::string& run, const LogOptions& opts, const LogSink& sink) = 0;
  /// Deletes everything the run created; stops it if running.
  virtual void remove(const std::string& run) = 0;
  /// The runs of `sweep` (the base name of the runs one submit made of a sweep), in
  /// index order; empty when there is no such sweep.
  virtual std::vector<SweepRun> sweep_runs(const std::string& sweep) = 0;
  /// Stops the run and keeps its record (status, and the logs that remain): its pods
  /// (processes) go. Returns false when it was stopped already; throws Error (exit 1)
  /// when it has ended or is a service.
  virtual bool stop(const std::string& run) = 0;
  /// Starts a stopped run again. Returns false when it was not stopped; throws Error
  /// when it has ended.
  virtual bool resume(const std::string& run) = 0;
  /// Calls `on_change` with the run's status now and whenever it changes, until the
  /// run has ended (after the last call), `on_change` returns false, or `cancelled`
  /// says stop.
  virtual void watch_status(const std::string& run, const StatusCallback& on_change,
                            const std::function<bool()>& cancelled) = 0;
  /// Starts (or updates) the project's service and, with opts.wait, waits until it is
  /// ready; throws Error when it cannot become ready by itself.
  virtual ServeResult serve(const project::Project& project, const ServeOptions& opts) = 0;
  /// Changes a service's replicas or its autoscaler's range; throws Error when there
  /// is no such service, UsageError when the request does not fit it.
  virtual ScaleResult scale(const ScaleRequest& req) = 0;
  /// What runs the runs, for `ktrain version --server`: {"server": where, ...}; the
  /// API server's version as "serverVersion".
  virtual nlohmann::ordered_json server_version() = 0;
};

}  // namespace ktrain::backend
