// A run's status from its object, its pods and the events about them, told in plain
// words (kube/run_state.h); a service's from its Deployment or operator's object.
#include "kube/run_state.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "base/cuda.h"
#include "base/timefmt.h"
#include "kube/json_read.h"
#include "kube/run_events.h"
#include "render/dev.h"
#include "render/render.h"

namespace ktrain::kube {

using namespace detail;

namespace {

/// A termination message without the newline (and spaces) it ends with.
std::string trimmed_message(std::string msg) {
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

/// A termination message of ktrain-launch: the cause on its first line, then, after
/// "last lines of rank R:", the rank's last output lines (which go to `lines`).
std::string split_termination_message(const std::string& msg, std::vector<std::string>* lines) {
  const auto header = msg.find("\nlast lines of ");
  if (header == std::string::npos) return msg;
  const auto body = msg.find('\n', header + 1);
  if (body != std::string::npos) {
    std::istringstream in(msg.substr(body + 1));
    for (std::string l; std::getline(in, l);) lines->push_back(l);
  }
  return msg.substr(0, header);
}

using nlohmann::json;

const json* train_container_status(const json& pod) {
  const auto& cs = at_path(pod, {"status", "containerStatuses"});
  if (!cs.is_array() || cs.empty()) return nullptr;
  const std::string name = log_container(pod);
  for (const auto& c : cs) {
    if (c.value("name", "") == name) return &c;
  }
  return &cs[0];
}

/// The first init container of `pod` that keeps the others from starting: waiting
/// with a reason (an image it cannot pull), or terminated with a non-zero code.
const json* blocking_init_status(const json& pod) {
  const auto& cs = at_path(pod, {"status", "initContainerStatuses"});
  if (!cs.is_array()) return nullptr;
  for (const auto& c : cs) {
    const auto& state = at_path(c, {"state"});
    if (const auto& t = at_path(state, {"terminated"}); t.is_object()) {
      if (integer(at_path(t, {"exitCode"})) != 0) return &c;
      continue;
    }
    if (const auto& w = at_path(state, {"waiting"}); w.is_object()) {
      const std::string reason = w.value("reason", "");
      return reason.empty() || reason == "PodInitializing" ? nullptr : &c;
    }
    return nullptr;  // running: the rest waits for it, as it should
  }
  return nullptr;
}

/// The image of init container `name` in `pod`'s spec ("" when there is none).
std::string init_image(const json& pod, const std::string& name) {
  const auto& cs = at_path(pod, {"spec", "initContainers"});
  if (!cs.is_array()) return "";
  for (const auto& c : cs) {
    if (c.value("name", "") == name) return c.value("image", "");
  }
  return "";
}

std::string format_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

bool is_image_pull_reason(const std::string& r) {
  return r == "ErrImagePull" || r == "ImagePullBackOff" || r == "InvalidImageName" ||
         r == "ErrImageNeverPull";
}

/// The scheduler's reason and message when `pod` is not scheduled (PodScheduled False).
void unscheduled(const json& pod, RankStatus& rank) {
  const auto& conds = at_path(pod, {"status", "conditions"});
  if (!conds.is_array()) return;
  for (const auto& c : conds) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
      rank.reason = c.value("reason", "Unschedulable");
      rank.message = c.value("message", "");
    }
  }
}

/// Groups rank numbers under a message, keeping the order messages first appear in.
struct Grouped {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks;
  void add(const std::string& msg, int rank) {
    if (!ranks.count(msg)) order.push_back(msg);
    ranks[msg].push_back(rank);
  }
};

}  // namespace

const json* train_container_spec(const json& pod_spec, const std::string& name) {
  const auto& cs = at_path(pod_spec, {"containers"});
  if (!cs.is_array() || cs.empty()) return nullptr;
  for (const auto& c : cs) {
    if (c.value("name", "") == name) return &c;
  }
  return &cs[0];
}

bool waits_for_cuda_node(const json& pod) {
  if (str(pod, {"metadata", "annotations", render::kAnnotationCuda}).empty()) return false;
  RankStatus r;
  unscheduled(pod, r);
  return r.reason == "Unschedulable";
}

std::string cuda_unschedulable(const json& pod, const std::vector<json>& nodes) {
  const auto need =
      parse_cuda_version(str(pod, {"metadata", "annotations", render::kAnnotationCuda}));
  if (!need) return "";
  std::vector<CudaVersion> have;
  for (const auto& n : nodes) {
    bool gpus = false;
    const auto& alloc = at_path(n, {"status", "allocatable"});
    if (alloc.is_object()) {
      for (auto it = alloc.begin(); it != alloc.end(); ++it) {
        const bool gpu = it.key() == "nvidia.com/gpu" || it.key().rfind("nvidia.com/mig-", 0) == 0;
        gpus = gpus || (gpu && it->is_string() && it->get<std::string>() != "0");
      }
    }
    if (!gpus) continue;
    const auto v = node_cuda(at_path(n, {"metadata", "labels"}));
    if (!v || v->runs(*need)) return "";  // it could run there, or nothing says it cannot
    if (std::find(have.begin(), have.end(), *v) == have.end()) have.push_back(*v);
  }
  if (have.empty()) return "";
  std::sort(have.begin(), have.end(),
            [](const CudaVersion& a, const CudaVersion& b) { return a.encoded() < b.encoded(); });
  std::string list;
  for (const auto& v : have) list += (list.empty() ? "" : ", ") + v.str();
  return "no node has a driver for CUDA " + need->str() + ": nodes have " + list +
         " (use nodes with a newer NVIDIA driver, or an image built for an older CUDA)";
}

RunStatus describe_service(const json& d, const std::vector<json>& pods) {
  RunStatus rs;
  const std::string kind = str(d, {"kind"});
  rs.summary =
      kind.empty() || kind == "Deployment" ? summarize_deployment(d) : summarize_operator(d);
  if (const auto& conds = at_path(d, {"status", "conditions"}); conds.is_array()) {
    for (const auto& c : conds) {
      std::string text = c.value("type", "") + "=" + c.value("status", "");
      if (auto r = c.value("reason", ""); !r.empty()) text += ": " + r;
      if (auto m = c.value("message", ""); !m.empty()) text += " (" + m + ")";
      rs.conditions.push_back(text);
    }
  }
  std::vector<const json*> sorted;
  for (const auto& p : pods) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](const json* a, const json* b) {
    auto ta = str(*a, {"metadata", "creationTimestamp"});
    auto tb = str(*b, {"metadata", "creationTimestamp"});
    return ta != tb ? ta < tb : str(*a, {"metadata", "name"}) < str(*b, {"metadata", "name"});
  });
  Grouped waiting;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const json& pod = *sorted[i];
    RankStatus r;
    r.index = static_cast<int>(i);
    r.pod = str(pod, {"metadata", "name"});
    r.phase = str(pod, {"status", "phase"});
    if (r.phase.empty()) r.phase = "Pending";
    r.node = str(pod, {"spec", "nodeName"});
    const auto& statuses = at_path(pod, {"status", "containerStatuses"});
    if (statuses.is_array() && !statuses.empty()) {
      const auto& cs = statuses[0];
      r.restarts = integer(at_path(cs, {"restartCount"}));
      if (const auto& w = at_path(cs, {"state", "waiting"}); w.is_object()) {
        r.reason = w.value("reason", "");
        r.message = w.value("message", "");
      } else if (const auto& t = at_path(cs, {"state", "terminated"}); t.is_object()) {
        r.reason = t.value("reason", "");
        r.exit_code = integer(at_path(t, {"exitCode"}));
      } else if (at_path(cs, {"ready"}).is_boolean() && !at_path(cs, {"ready"}).get<bool>()) {
        r.reason = "NotReady";
      }
    }
    if (r.phase == "Pending" && r.reason.empty()) unscheduled(pod, r);
    if (!r.reason.empty() && r.reason != "NotReady" && r.reason != "ContainerCreating" &&
        r.reason != "PodInitializing") {
      waiting.add(r.reason + (r.message.empty() ? "" : ": " + r.message), r.index);
    }
    rs.ranks.push_back(std::move(r));
  }
  for (const auto& msg : waiting.order) {
    auto text = format_ranks(waiting.ranks[msg]);
    text.replace(0, text.find(' '), waiting.ranks[msg].size() == 1 ? "replica" : "replicas");
    rs.explanations.push_back(text + " cannot start: " + msg);
  }
  return rs;
}

namespace {

/// An event about a pod: its newest message, and when that reason was first and last seen.
struct PodEvent {
  std::string message;
  std::optional<std::chrono::system_clock::time_point> first, last;
};

/// The node groups in a Cluster Autoscaler TriggeredScaleUp message,
/// "pod triggered scale-up: [{ng-a 1->2 (max: 10)} {ng-b 0->1 (max: 3)}]", as
/// "ng-a (1 -> 2 nodes, at most 10), ng-b (...)"; "" when the message has another shape.
std::string scale_up_groups(const std::string& message) {
  std::string out;
  size_t at = 0;
  while ((at = message.find('{', at)) != std::string::npos) {
    const size_t end = message.find('}', at);
    if (end == std::string::npos) break;
    std::istringstream in(message.substr(at + 1, end - at - 1));
    std::string group, sizes, max_word, max;
    in >> group >> sizes >> max_word >> max;
    const size_t arrow = sizes.find("->");
    if (group.empty() || arrow == std::string::npos) return "";
    std::string text =
        group + " (" + sizes.substr(0, arrow) + " -> " + sizes.substr(arrow + 2) + " nodes";
    if (max_word == "(max:" && !max.empty() && max.back() == ')') {
      text += ", at most " + max.substr(0, max.size() - 1);
    }
    out += (out.empty() ? "" : ", ") + text + ")";
    at = end + 1;
  }
  return out;
}

/// The autoscaler's reasons in a NotTriggerScaleUp message ("pod didn't trigger
/// scale-up: 3 node(s) didn't match ..., 1 max node group size reached"): after the first
/// ": ", or the whole message.
std::string no_scale_up_reasons(const std::string& message) {
  const size_t colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

}  // namespace

namespace {

/// Whether the Job or operator's object is suspended (spec.suspend; the Kubeflow
/// operators' spec.runPolicy.suspend).
bool suspended(const json& obj) {
  for (const auto& v :
       {at_path(obj, {"spec", "suspend"}), at_path(obj, {"spec", "runPolicy", "suspend"})}) {
    if (v.is_boolean() && v.get<bool>()) return true;
  }
  return false;
}

/// Which operator makes the pods of `kind`, for a user to check that it runs.
std::string operator_hint(const std::string& kind) {
  if (kind == "PyTorchJob" || kind == "TFJob") {
    return "is the Kubeflow Training Operator running in the cluster?";
  }
  if (kind == "MPIJob") return "is the MPI Operator (or Kubeflow Training Operator) running?";
  if (kind == "JobSet") return "is the JobSet controller running in the cluster?";
  if (kind == "TrainJob") {
    return "is Kubeflow Trainer running, with the runtime that spec.runtimeRef names?";
  }
  return "is its operator running in the cluster?";
}

/// The image of the run's training container: the Job's template, else (an operator's
/// object, whose shape is its own) the first container of a pod of the run.
std::string run_image(const json& job, const std::vector<json>& pods) {
  const auto& containers = at_path(job, {"spec", "template", "spec", "containers"});
  if (containers.is_array()) {
    for (const auto& c : containers) {
      if (c.is_object() && c.value("name", "") == "train") return c.value("image", "");
    }
  }
  for (const auto& p : pods) {
    const auto& cs = at_path(p, {"spec", "containers"});
    if (cs.is_array() && !cs.empty() && cs[0].is_object()) return cs[0].value("image", "");
  }
  if (containers.is_array() && !containers.empty() && containers[0].is_object()) {
    return containers[0].value("image", "");
  }
  return "";
}

}  // namespace

RunStatus describe_run(const json& job, const std::vector<json>& pods,
                       const std::vector<json>& events, std::chrono::system_clock::time_point now,
                       const std::vector<json>& nodes) {
  RunStatus rs;
  // A Job (list items may leave the kind out), or an operator's object.
  std::string kind = str(job, {"kind"});
  if (kind.empty()) kind = "Job";
  const bool operator_kind = kind != "Job";
  rs.summary = operator_kind ? summarize_operator(job) : summarize_job(job);
  const std::string job_name = str(job, {"metadata", "name"});
  // The Job whose events tell why pods are not created: the run's, or the one Job that
  // a JobSet (a TrainJob's JobSet) makes of the run's replicated job "node".
  const std::string events_job =
      kind == "JobSet" || kind == "TrainJob" ? job_name + "-node-0" : job_name;

  if (const auto& conds = at_path(job, {"status", "conditions"}); conds.is_array()) {
    for (const auto& c : conds) {
      if (c.value("status", "") != "True") continue;
      std::string text = c.value("type", "");
      if (auto r = c.value("reason", ""); !r.empty()) text += ": " + r;
      if (auto m = c.value("message", ""); !m.empty()) text += " (" + m + ")";
      rs.conditions.push_back(text);
      if (c.value("type", "") == "Failed" && c.value("reason", "") == "PodFailurePolicy") {
        // A rule (train.retry's first, then ktrain's own) ended the run: no retries.
        rs.explanations.push_back(
            "a pod failure rule failed the run at once, without retries (train.retry, in "
            "order, then exit 78: the launcher's configuration error): " +
            c.value("message", "(no message)"));
      }
    }
  }
  rs.image = run_image(job, pods);
  rs.started = time_at(job, {"status", "startTime"});
  rs.finished = time_at(job, {"status", "completionTime"});
  // Else when the ending condition came (the operators': Succeeded, Completed, Complete).
  for (const char* type : {"Failed", "Succeeded", "Completed", "Complete"}) {
    json ending;
    if (rs.finished || !condition_true(job, type, &ending)) continue;
    if (auto t = parse_rfc3339(ending.value("lastTransitionTime", ""))) rs.finished = t;
  }

  // The newest pod of each rank.
  std::map<int, const json*> newest;
  std::set<std::string> pod_names;
  for (const auto& p : pods) {
    const int r = pod_rank(p);
    if (r < 0) continue;
    pod_names.insert(str(p, {"metadata", "name"}));
    auto it = newest.find(r);
    if (it == newest.end()) {
      newest[r] = &p;
      continue;
    }
    auto a = str(*it->second, {"metadata", "creationTimestamp"});
    auto b = str(p, {"metadata", "creationTimestamp"});
    if (b > a ||
        (b == a && str(p, {"metadata", "name"}) > str(*it->second, {"metadata", "name"}))) {
      it->second = &p;
    }
  }

  // Events about the Job and its pods, latest message per (object, reason).
  std::map<std::string, std::string> pod_event;     // "pod/reason" -> message
  std::map<std::string, PodEvent> pod_event_times;  // "pod/reason" -> newest, first, last
  std::vector<std::string> job_event_messages;
  for (const auto& e : events) {
    const auto about = str(e, {"involvedObject", "kind"});
    const auto name = str(e, {"involvedObject", "name"});
    const auto reason = e.value("reason", "");
    const auto message = e.value("message", "");
    if ((about == "Job" && name == events_job) || (about == kind && name == job_name)) {
      // The Job controller's FailedCreate; the Kubeflow operator's FailedCreatePod.
      if ((reason == "FailedCreate" || reason == "FailedCreatePod") && !message.empty() &&
          std::find(job_event_messages.begin(), job_event_messages.end(), message) ==
              job_event_messages.end()) {
        job_event_messages.push_back(message);
      }
    } else if (about == "Pod" && pod_names.count(name)) {
      const std::string key = name + "/" + reason;
      PodEvent& pe = pod_event_times[key];
      const auto last = event_time(e, false);
      const auto first = event_time(e, true);
      if (!pe.last || (last && *last >= *pe.last)) {
        pe.message = message;
        pe.last = last;
        pod_event[key] = message;
      }
      if (first && (!pe.first || *first < *pe.first)) pe.first = first;
    }
  }
  // What the Cluster Autoscaler last said of a pod that cannot be scheduled: the newer of
  // TriggeredScaleUp and NotTriggerScaleUp, or nullptr.
  auto autoscaler_event = [&](const std::string& pod, bool* triggered) -> const PodEvent* {
    auto up = pod_event_times.find(pod + "/TriggeredScaleUp");
    auto no = pod_event_times.find(pod + "/NotTriggerScaleUp");
    const PodEvent* a = up == pod_event_times.end() ? nullptr : &up->second;
    const PodEvent* b = no == pod_event_times.end() ? nullptr : &no->second;
    if (a && b) (a->last >= b->last ? b : a) = nullptr;
    *triggered = a != nullptr;
    return a ? a : b;
  };

  const bool ended =
      rs.summary.state == RunState::kSucceeded || rs.summary.state == RunState::kFailed;
  Grouped unschedulable, image_pull, config_error, oom, failed, scaling_up, no_scale_up;
  // For each scale-up in progress, when the first of its pods asked for it.
  std::map<std::string, std::chrono::system_clock::time_point> scale_up_since;
  std::map<int, std::string> image_of_rank;
  std::set<int> launcher_image_ranks;  // ranks that cannot pull the launcher image
  const int n = std::max(rs.summary.nodes, newest.empty() ? 0 : newest.rbegin()->first + 1);
  for (int i = 0; i < n; ++i) {
    RankStatus rank;
    rank.index = i;
    auto it = newest.find(i);
    if (it == newest.end()) {
      if (ended) continue;
      const bool stopped = rs.summary.state == RunState::kStopped;
      rank.phase = stopped ? "Stopped" : "Pending";
      rank.reason = stopped ? "" : "NotCreated";
      rs.ranks.push_back(rank);
      continue;
    }
    const json& pod = *it->second;
    rank.pod = str(pod, {"metadata", "name"});
    rank.phase = str(pod, {"status", "phase"});
    if (rank.phase.empty()) rank.phase = "Pending";
    rank.node = str(pod, {"spec", "nodeName"});
    if (const json* cs = train_container_status(pod)) {
      rank.restarts = integer(at_path(*cs, {"restartCount"}));
      const auto& state = at_path(*cs, {"state"});
      if (const auto& t = at_path(state, {"terminated"}); t.is_object()) {
        rank.exit_code = integer(at_path(t, {"exitCode"}));
        rank.reason = t.value("reason", "");
        rank.message = split_termination_message(t.value("message", ""), &rank.last_lines);
      } else if (const auto& w = at_path(state, {"waiting"}); w.is_object()) {
        rank.reason = w.value("reason", "");
        rank.message = w.value("message", "");
      }
      if (rank.reason.empty()) {
        if (const auto& lt = at_path(*cs, {"lastState", "terminated"});
            lt.is_object() && lt.value("reason", "") == "OOMKilled") {
          rank.reason = "OOMKilled";
          rank.exit_code = integer(at_path(lt, {"exitCode"}));
        }
      }
    }
    std::string init_name;  // the init container that holds this rank back
    if (rank.reason.empty() || rank.reason == "PodInitializing" ||
        rank.reason == "ContainerCreating" || rank.phase == "Failed") {
      if (const json* ic = blocking_init_status(pod)) {
        init_name = ic->value("name", "");
        const auto& state = at_path(*ic, {"state"});
        if (const auto& t = at_path(state, {"terminated"}); t.is_object()) {
          rank.exit_code = integer(at_path(t, {"exitCode"}));
          const std::string msg = trimmed_message(t.value("message", ""));
          rank.reason = "InitContainerFailed";
          rank.message = "init container " + init_name + " exited " +
                         std::to_string(*rank.exit_code) + (msg.empty() ? "" : ": " + msg);
        } else {
          const auto& w = at_path(state, {"waiting"});
          rank.reason = w.value("reason", "");
          rank.message = w.value("message", "");
        }
      }
    }
    if (rank.phase == "Pending" && rank.reason.empty()) unscheduled(pod, rank);
    if (rank.reason.empty() && rank.phase == "Failed") {
      rank.reason = str(pod, {"status", "reason"});
      rank.message = str(pod, {"status", "message"});
    }

    // Explanations.
    if (rank.reason == "Unschedulable") {
      std::string msg = rank.message;
      if (msg.empty()) msg = pod_event[rank.pod + "/FailedScheduling"];
      if (std::string cuda = cuda_unschedulable(pod, nodes); !cuda.empty()) msg = cuda;
      bool triggered = false;
      if (const PodEvent* ca = autoscaler_event(rank.pod, &triggered); ca && triggered) {
        std::string groups = scale_up_groups(ca->message);
        std::string text =
            groups.empty()
                ? "the Cluster Autoscaler is adding nodes (" + ca->message + ")"
                : "the Cluster Autoscaler is adding a node to " +
                      std::string(std::count(ca->message.begin(), ca->message.end(), '{') == 1
                                      ? "group "
                                      : "groups ") +
                      groups;
        if (ca->first) {
          auto [since, fresh] = scale_up_since.emplace(text, *ca->first);
          if (!fresh && *ca->first < since->second) since->second = *ca->first;
        }
        scaling_up.add(text, i);
      } else if (ca) {
        no_scale_up.add(no_scale_up_reasons(ca->message) + "\x1f" + msg, i);
      } else {
        unschedulable.add(msg, i);
      }
    } else if (is_image_pull_reason(rank.reason)) {
      std::string msg = pod_event[rank.pod + "/Failed"];
      if (msg.empty()) msg = rank.message;
      if (msg.empty()) msg = rank.reason;
      if (!init_name.empty()) {
        image_of_rank[i] = init_image(pod, init_name);
        if (init_name == render::kLauncherContainer) launcher_image_ranks.insert(i);
      } else if (const json* c = train_container_spec(at_path(pod, {"spec"}), log_container(pod))) {
        image_of_rank[i] = c->value("image", "");
      }
      image_pull.add(msg, i);
    } else if (rank.reason == "InitContainerFailed") {
      config_error.add(rank.message, i);
    } else if (rank.reason == "CreateContainerConfigError" ||
               rank.reason == "CreateContainerError" || rank.reason == "RunContainerError") {
      config_error.add(rank.message.empty() ? rank.reason : rank.message, i);
    } else if (rank.reason == "OOMKilled") {
      // The limit it passed, from the pod's spec (the kubelet's status does not say).
      std::string limit;
      if (const json* c = train_container_spec(at_path(pod, {"spec"}), log_container(pod))) {
        limit = str(*c, {"resources", "limits", "memory"});
      }
      oom.add(limit, i);
    } else if (rank.phase == "Failed" && rank.exit_code && *rank.exit_code == kExitHung &&
               !rank.message.empty()) {
      // The watchdog's cause: which worker, silent for how long.
      failed.add("exit code 74 (the watchdog): " + trimmed_message(rank.message), i);
    } else if (rank.phase == "Failed" && rank.exit_code && *rank.exit_code == kExitCudaDriver &&
               !rank.message.empty()) {
      // ktrain-launch's refusal names the node and both versions: said as it is.
      failed.add("exit code 79: the node's NVIDIA driver is too old for the image: " +
                     trimmed_message(rank.message),
                 i);
    } else if (rank.phase == "Failed" && rank.exit_code && *rank.exit_code != 0 &&
               *rank.exit_code != 75) {
      std::string msg = "exit code " + std::to_string(*rank.exit_code);
      if (!rank.reason.empty()) msg += " (" + rank.reason + ")";
      failed.add(msg, i);
    }
    rs.ranks.push_back(rank);
  }

  const bool queued = str(job, {"metadata", "labels", render::kLabelQueued}) == "true";
  if (queued && rs.summary.state == RunState::kPending) {
    rs.explanations.push_back(
        "waits for a place in its sweep (train.sweep.parallel): 'ktrain submit' starts it when "
        "another run of the sweep ends; 'ktrain resume " +
        rs.summary.name + "' starts it now");
  } else if (rs.summary.state == RunState::kStopped) {
    const auto at = str(job, {"metadata", "annotations", kAnnotationStoppedAt});
    rs.explanations.push_back("stopped by 'ktrain stop'" + (at.empty() ? "" : " at " + at) +
                              ": its pods are gone, the " + kind +
                              " and its status are kept; 'ktrain "
                              "resume " +
                              rs.summary.name + "' starts it again");
  } else if (suspended(job) && !ended) {
    auto queue = str(job, {"metadata", "labels", "kueue.x-k8s.io/queue-name"});
    rs.explanations.push_back(
        queue.empty()
            ? "the " + kind + " is suspended: its pods are not created until it is resumed"
            : "the " + kind + " is queued: it waits for Kueue to admit it from the LocalQueue '" +
                  queue + "' (the queue's ClusterQueue has no room yet)");
  } else if (operator_kind && !ended && newest.empty() &&
             !at_path(job, {"status", "conditions"}).is_array() &&
             !at_path(job, {"status", "replicatedJobsStatus"}).is_array() &&
             !at_path(job, {"status", "jobsStatus"}).is_array()) {
    // Nothing has written the object's status: the operator that makes its pods.
    rs.explanations.push_back("no operator has acted on the " + kind +
                              " yet (it has no status and no pods): " + operator_hint(kind));
  }
  for (const auto& msg : job_event_messages) {
    if (msg.find("exceeded quota") != std::string::npos ||
        msg.find("forbidden: exceeded") != std::string::npos) {
      rs.explanations.push_back(
          "the " + kind +
          " cannot create its pods: the namespace's ResourceQuota is used up: " + msg);
    } else {
      rs.explanations.push_back("the " + kind + " cannot create its pods: " + msg);
    }
  }
  for (const auto& msg : unschedulable.order) {
    rs.explanations.push_back(format_ranks(unschedulable.ranks[msg]) + " cannot be scheduled: " +
                              (msg.empty() ? "no node fits (no message from the scheduler)" : msg));
  }
  for (const auto& msg : scaling_up.order) {
    const auto& ranks = scaling_up.ranks[msg];
    std::string text =
        format_ranks(ranks) + (ranks.size() == 1 ? " waits" : " wait") + " for a node: " + msg;
    if (auto since = scale_up_since.find(msg);
        since != scale_up_since.end() && now > since->second) {
      text += ", for " + format_age(now - since->second) + " so far";
    }
    rs.explanations.push_back(text);
  }
  for (const auto& key : no_scale_up.order) {
    const size_t sep = key.find('\x1f');
    const std::string reasons = key.substr(0, sep), scheduler = key.substr(sep + 1);
    rs.explanations.push_back(
        format_ranks(no_scale_up.ranks[key]) +
        " cannot be scheduled, and no node group of the Cluster Autoscaler can fit " +
        (no_scale_up.ranks[key].size() == 1 ? "it" : "them") + ": " + reasons +
        (scheduler.empty() ? "" : " (scheduler: " + scheduler + ")"));
  }
  for (const auto& msg : image_pull.order) {
    const auto& ranks = image_pull.ranks[msg];
    const std::string image = image_of_rank[ranks.front()];
    if (launcher_image_ranks.count(ranks.front())) {
      rs.explanations.push_back(
          format_ranks(ranks) + " cannot pull the launcher image" +
          (image.empty() ? "" : " " + image) + ": " + msg +
          " (the image lacks ktrain-launch, so an init container copies it from the launcher "
          "image: push one with 'ktrain build --launcher-image REF' and name it with "
          "launcher.image or KTRAIN_LAUNCHER_IMAGE, or set launcher.inject: never if the "
          "image has /opt/ktrain/bin/ktrain-launch)");
      continue;
    }
    rs.explanations.push_back(format_ranks(ranks) + " cannot pull the image" +
                              (image.empty() ? "" : " " + image) + ": " + msg +
                              " (check the name and tag, and imagePullSecrets for a private "
                              "registry)");
  }
  for (const auto& msg : config_error.order) {
    rs.explanations.push_back(format_ranks(config_error.ranks[msg]) + " cannot start: " + msg);
  }
  for (const auto& limit : oom.order) {
    rs.explanations.push_back(format_ranks(oom.ranks[limit]) + " ran out of memory" +
                              (limit.empty() ? "" : " (limit " + limit + ")") +
                              " and was killed (OOMKilled): raise train.memory or lower the "
                              "batch size");
  }
  for (const auto& msg : failed.order) {
    rs.explanations.push_back(format_ranks(failed.ranks[msg]) + " failed with " + msg);
  }
  return rs;
}

}  // namespace ktrain::kube
