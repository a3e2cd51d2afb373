#pragma once
// What ktrain knows of a run's state, as `list` and `status` show it: shared by the
// backends, which make it, and kube/run_state, which reads it from the cluster's objects.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ktrain {

/// The state of a whole run, as `ktrain list` shows it. kStopped: `ktrain stop` took its
/// pods away; `ktrain resume` starts them again.
enum class RunState { kPending, kRunning, kSucceeded, kFailed, kStopped, kUnknown };

/// "Pending", "Running", "Succeeded", "Failed", "Stopped", "Unknown".
const char* to_string(RunState s);

/// One row of `ktrain list`.
struct RunSummary {
  std::string name;
  /// "train" (a Job), "dev" (the Job of a dev pod) or "serve" (a Deployment; nodes =
  /// replicas).
  std::string kind = "train";
  std::string namespace_;  ///< "" for local runs
  std::string sweep;       ///< the sweep it belongs to (its base name), "" if none
  RunState state = RunState::kUnknown;
  int nodes = 0;
  int gpus = 0;  ///< per node
  std::chrono::system_clock::time_point created;
  std::map<std::string, std::string> labels;  ///< the Job's (Deployment's) labels
  bool queued = false;  ///< waits for a place in its sweep (train.sweep.parallel)
};

/// One rank (node/pod) of a run, as `ktrain status` shows it.
struct RankStatus {
  int index = 0;
  std::string pod;    ///< pod name, or "node-N" locally
  std::string phase;  ///< Pending, Running, Succeeded, Failed
  std::string node;   ///< Kubernetes node, or the host name locally
  int restarts = 0;
  std::optional<int> exit_code;
  std::string reason;   ///< OOMKilled, Error, ImagePullBackOff, Unschedulable, ...
  std::string message;  ///< termination message or the scheduler's words
  /// The last lines the rank printed before it failed, as ktrain-launch kept them in
  /// its termination message (they outlive the log, with the pod object).
  std::vector<std::string> last_lines;
};

/// An event about a run's objects (its Job or operator object, its pods), as
/// `ktrain events` and `status --events` show it.
struct RunEvent {
  std::optional<std::chrono::system_clock::time_point> first, last;  ///< first and last seen
  int count = 1;                                                     ///< how often it happened
  std::string type;                                                  ///< Normal or Warning
  std::string reason;   ///< FailedScheduling, Pulled, BackOff, ...
  std::string object;   ///< "pod/NAME", "job/NAME", ...
  std::string message;  ///< the component's words
  std::string source;   ///< who said it (default-scheduler, kubelet, job-controller)
  std::string meaning;  ///< what it means for the run, in one line ("" when plain)
};

/// Everything `ktrain status RUN` shows.
struct RunStatus {
  RunSummary summary;
  std::vector<std::string> conditions;  ///< "Complete", "Failed: BackoffLimitExceeded", ...
  std::vector<RankStatus> ranks;
  /// Why the run is pending or failing, in plain words (from conditions and events).
  std::vector<std::string> explanations;
  int first_failed = -1;  ///< index of the rank that failed first; -1 when none failed
  std::optional<std::chrono::system_clock::time_point> started;
  std::optional<std::chrono::system_clock::time_point> finished;
  /// The image the run's training container runs ("" = not known: a local run).
  std::string image;
  /// The checkpoint a restart would resume from ("" = none, or not known: a cluster
  /// run's volume is not readable from here) and when it was written.
  std::string checkpoint;
  std::optional<std::chrono::system_clock::time_point> checkpoint_written;
  /// Where there is no checkpoint to show: "none yet in DIR", or why it is not known
  /// (a cluster run's pod that could not be asked); "" when the run keeps none.
  std::string checkpoint_note;
  /// The events about the run's objects, oldest first (a cluster run's; none locally).
  std::vector<RunEvent> events;
};

/// A string that changes exactly when something `ktrain status` shows changes (not
/// the age), to redraw only then.
std::string status_fingerprint(const RunStatus& s);

}  // namespace ktrain
