// A run's object (Job, Deployment, an operator's) summed up in a RunSummary, and which
// rank and container a pod is (kube/run_state.h).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kube/json_read.h"
#include "kube/run_state.h"
#include "render/dev.h"
#include "render/render.h"

namespace ktrain::kube {

using nlohmann::json;
using namespace detail;

/// The kind of the object that controls `obj` (its controller ownerReference), or "".
static std::string controller_kind(const json& obj) {
  const auto& refs = at_path(obj, {"metadata", "ownerReferences"});
  if (!refs.is_array()) return "";
  for (const auto& r : refs) {
    if (r.is_object() && r.value("controller", false)) return r.value("kind", "");
  }
  return "";
}

bool has_controller(const json& obj) {
  return !controller_kind(obj).empty();
}

int pod_rank(const json& pod) {
  // The Kubeflow Training Operator's pods: the replica's type and index. Node 0 is the
  // PyTorchJob's Master (its Workers are nodes 1...) or the MPIJob's Launcher (which runs
  // mpirun; its Workers are nodes 1...); a TFJob's Workers are nodes 0...
  if (const std::string type = str(pod, {"metadata", "labels", kLabelReplicaType}); !type.empty()) {
    if (type == "master" || type == "launcher") return 0;
    int index = -1;
    try {
      index = std::stoi(str(pod, {"metadata", "labels", kLabelReplicaIndex}));
    } catch (...) {
      return -1;
    }
    if (index < 0) return -1;
    const std::string owner = controller_kind(pod);
    return index + (owner == "PyTorchJob" || owner == "MPIJob" ? 1 : 0);
  }
  auto s = str(pod, {"metadata", "labels", kCompletionIndex});
  if (s.empty()) s = str(pod, {"metadata", "annotations", kCompletionIndex});
  if (s.empty()) return -1;
  try {
    return std::stoi(s);
  } catch (...) {
    return -1;
  }
}

std::string log_container(const json& pod) {
  if (auto c = str(pod, {"metadata", "annotations", render::kAnnotationDefaultContainer});
      !c.empty()) {
    return c;
  }
  return kTrainContainer;
}

std::optional<CheckpointQuery> checkpoint_query(const json& pod) {
  const std::string name = log_container(pod);
  const auto& containers = at_path(pod, {"spec", "containers"});
  if (!containers.is_array()) return std::nullopt;
  const std::string launcher = std::string(render::kLauncherDir) + "/ktrain-launch";
  for (const auto& c : containers) {
    if (!c.is_object() || c.value("name", "") != name) continue;
    const auto& cmd = c.value("command", json::array());
    if (!cmd.is_array() || cmd.empty() || cmd[0] != launcher) return std::nullopt;
    const auto& env = c.value("env", json::array());
    if (!env.is_array()) return std::nullopt;
    for (const auto& e : env) {
      if (!e.is_object() || e.value("name", "") != "KTRAIN_CHECKPOINT_DIR") continue;
      const std::string dir = e.contains("value") && e["value"].is_string()
                                  ? e["value"].get<std::string>()
                                  : std::string();
      if (dir.empty()) return std::nullopt;
      return CheckpointQuery{name, {launcher, "--latest-checkpoint"}, dir};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<CheckpointSeen> parse_latest_checkpoint(std::string_view answer) {
  while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) {
    answer.remove_suffix(1);
  }
  const auto space = answer.find(' ');
  if (answer.empty() || space == std::string_view::npos || space == 0 ||
      space + 1 == answer.size() || answer.find('\n') != std::string_view::npos) {
    return std::nullopt;
  }
  std::int64_t t = 0;
  for (char c : answer.substr(0, space)) {
    if (c < '0' || c > '9' || t > (std::int64_t{1} << 40)) return std::nullopt;
    t = t * 10 + (c - '0');
  }
  return CheckpointSeen{std::string(answer.substr(space + 1)),
                        std::chrono::system_clock::time_point(std::chrono::seconds(t))};
}

/// metadata.labels as a map (the string values).
static std::map<std::string, std::string> labels_of(const json& obj) {
  std::map<std::string, std::string> out;
  if (const auto& l = at_path(obj, {"metadata", "labels"}); l.is_object()) {
    for (const auto& [k, v] : l.items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  }
  return out;
}

RunSummary summarize_job(const json& job) {
  RunSummary s;
  s.labels = labels_of(job);
  s.queued = str(job, {"metadata", "labels", render::kLabelQueued}) == "true";
  if (str(job, {"metadata", "labels", render::kLabelDev}) == "true") s.kind = "dev";
  s.name = str(job, {"metadata", "labels", kLabelRun});
  if (s.name.empty()) s.name = str(job, {"metadata", "name"});
  s.namespace_ = str(job, {"metadata", "namespace"});
  s.sweep = str(job, {"metadata", "labels", kLabelSweep});
  const auto& spec = at_path(job, {"spec"});
  s.nodes = integer(at_path(spec, {"parallelism"}), integer(at_path(spec, {"completions"}), 1));
  if (const json* c = train_container_spec(at_path(spec, {"template", "spec"}))) {
    s.gpus = gpus_of(*c);
  }
  if (auto t = time_at(job, {"metadata", "creationTimestamp"})) s.created = *t;

  const auto& st = at_path(job, {"status"});
  if (condition_true(job, "Complete") || condition_true(job, "SuccessCriteriaMet")) {
    s.state = RunState::kSucceeded;
  } else if (condition_true(job, "Failed") || condition_true(job, "FailureTarget")) {
    s.state = RunState::kFailed;
  } else if (at_path(spec, {"suspend"}).is_boolean() && at_path(spec, {"suspend"}).get<bool>()) {
    // Suspended by `ktrain stop`, or else waiting to be let in (Kueue, a patch).
    s.state = str(job, {"metadata", "labels", kLabelStopped}) == "true" ? RunState::kStopped
                                                                        : RunState::kPending;
  } else {
    const int active = integer(at_path(st, {"active"}));
    const auto& ready = at_path(st, {"ready"});
    if (ready.is_number_integer()) {
      s.state = ready.get<int>() > 0 ? RunState::kRunning : RunState::kPending;
    } else {
      s.state = active > 0 ? RunState::kRunning : RunState::kPending;
    }
  }
  return s;
}

RunSummary summarize_operator(const json& obj) {
  RunSummary s;
  const std::string kind = str(obj, {"kind"});
  const bool serving = kind == "InferenceService" || kind == "LeaderWorkerSet";
  s.kind = serving ? "serve" : "train";
  s.labels = labels_of(obj);
  s.queued = str(obj, {"metadata", "labels", render::kLabelQueued}) == "true";
  s.name = str(obj, {"metadata", "labels", kLabelRun});
  if (s.name.empty()) s.name = str(obj, {"metadata", "name"});
  s.namespace_ = str(obj, {"metadata", "namespace"});
  s.sweep = str(obj, {"metadata", "labels", kLabelSweep});
  if (auto t = time_at(obj, {"metadata", "creationTimestamp"})) s.created = *t;
  const auto& spec = at_path(obj, {"spec"});
  // The first container of a pod template's spec.
  auto first_container = [](const json& pod_spec) -> const json* {
    const auto& cs = at_path(pod_spec, {"containers"});
    return cs.is_array() && !cs.empty() ? &cs[0] : nullptr;
  };
  bool suspended = false;
  if (kind == "PyTorchJob" || kind == "TFJob" || kind == "MPIJob") {
    const char* field = kind == "PyTorchJob" ? "pytorchReplicaSpecs"
                        : kind == "TFJob"    ? "tfReplicaSpecs"
                                             : "mpiReplicaSpecs";
    const auto& replicas = at_path(spec, {field});
    if (replicas.is_object()) {
      for (auto it = replicas.begin(); it != replicas.end(); ++it) {
        if (kind == "MPIJob" && it.key() == "Launcher") continue;  // the GPUs are the Workers'
        s.nodes += integer(at_path(it.value(), {"replicas"}), 1);
        if (const json* c = first_container(at_path(it.value(), {"template", "spec"}))) {
          s.gpus = std::max(s.gpus, gpus_of(*c));
        }
      }
    }
    suspended = at_path(spec, {"runPolicy", "suspend"}).is_boolean() &&
                at_path(spec, {"runPolicy", "suspend"}).get<bool>();
  } else if (kind == "JobSet") {
    const auto& rjs = at_path(spec, {"replicatedJobs"});
    if (rjs.is_array()) {
      for (const auto& rj : rjs) {
        const auto& job = at_path(rj, {"template", "spec"});
        s.nodes +=
            integer(at_path(rj, {"replicas"}), 1) *
            integer(at_path(job, {"parallelism"}), integer(at_path(job, {"completions"}), 1));
        if (const json* c = first_container(at_path(job, {"template", "spec"}))) {
          s.gpus = std::max(s.gpus, gpus_of(*c));
        }
      }
    }
  } else if (kind == "TrainJob") {
    s.nodes = integer(at_path(spec, {"trainer", "numNodes"}), 1);
    s.gpus = gpus_of(json{{"resources", at_path(spec, {"trainer", "resourcesPerNode"})}});
  } else if (kind == "InferenceService") {
    s.nodes = integer(at_path(spec, {"predictor", "minReplicas"}), 1);
    if (const json* c = first_container(at_path(spec, {"predictor"}))) s.gpus = gpus_of(*c);
    if (s.gpus == 0) s.gpus = gpus_of(at_path(spec, {"predictor", "model"}));
  } else if (kind == "LeaderWorkerSet") {
    s.nodes = integer(at_path(spec, {"replicas"}), 1);
    if (const json* c =
            first_container(at_path(spec, {"leaderWorkerTemplate", "workerTemplate", "spec"}))) {
      s.gpus = gpus_of(*c);
    }
  }
  if (!suspended && at_path(spec, {"suspend"}).is_boolean()) {
    suspended = at_path(spec, {"suspend"}).get<bool>();
  }

  if (serving) {
    const bool ready = kind == "InferenceService" ? condition_true(obj, "Ready")
                                                  : condition_true(obj, "Available");
    s.state = ready ? RunState::kRunning : RunState::kPending;
  } else if (condition_true(obj, "Succeeded") || condition_true(obj, "Complete") ||
             condition_true(obj, "Completed")) {
    s.state = RunState::kSucceeded;
  } else if (condition_true(obj, "Failed")) {
    s.state = RunState::kFailed;
  } else if (suspended || condition_true(obj, "Suspended")) {
    // Suspended by `ktrain stop`, or else waiting to be let in (Kueue).
    s.state = str(obj, {"metadata", "labels", kLabelStopped}) == "true" ? RunState::kStopped
                                                                        : RunState::kPending;
  } else if (condition_true(obj, "Running")) {
    s.state = RunState::kRunning;
  } else {
    // JobSet and TrainJob: running once a Job of theirs has active pods.
    int active = 0;
    for (const char* list : {"replicatedJobsStatus", "jobsStatus"}) {
      const auto& js = at_path(obj, {"status", list});
      if (!js.is_array()) continue;
      for (const auto& j : js) active += integer(at_path(j, {"active"}));
    }
    s.state = active > 0 ? RunState::kRunning : RunState::kPending;
  }
  return s;
}

bool managed_by_ktrain(const json& obj) {
  return str(obj, {"metadata", "labels", kLabelManagedBy}) == "ktrain";
}

RunSummary summarize_deployment(const json& d) {
  RunSummary s;
  s.kind = "serve";
  s.labels = labels_of(d);
  s.name = str(d, {"metadata", "labels", kLabelRun});
  if (s.name.empty()) s.name = str(d, {"metadata", "name"});
  s.namespace_ = str(d, {"metadata", "namespace"});
  s.nodes = integer(at_path(d, {"spec", "replicas"}), 1);
  const auto& cs = at_path(d, {"spec", "template", "spec", "containers"});
  if (cs.is_array() && !cs.empty()) s.gpus = gpus_of(cs[0]);
  if (auto t = time_at(d, {"metadata", "creationTimestamp"})) s.created = *t;
  const int ready = integer(at_path(d, {"status", "readyReplicas"}));
  s.state = s.nodes > 0 && ready >= s.nodes ? RunState::kRunning : RunState::kPending;
  return s;
}

}  // namespace ktrain::kube
