// A run's events, explained (kube/run_events.h).
#include "kube/run_events.h"

#include <algorithm>

#include "base/text.h"
#include "kube/json_read.h"

namespace ktrain::kube {

using detail::at_path;
using detail::integer;
using detail::str;
using detail::time_at;
using nlohmann::json;

namespace {

bool has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> event_time(const json& e, bool first) {
  if (auto t = time_at(e, {first ? "firstTimestamp" : "lastTimestamp"})) return t;
  // events.k8s.io: eventTime is the first time, a series' lastObservedTime the last.
  if (!first) {
    if (auto t = time_at(e, {"series", "lastObservedTime"})) return t;
  }
  if (auto t = time_at(e, {"eventTime"})) return t;
  return time_at(e, {"metadata", "creationTimestamp"});
}

std::string event_meaning(const std::string& reason, const std::string& message) {
  const std::string m = ascii_lower(message);
  if (reason == "FailedScheduling") {
    if (has(m, "insufficient nvidia.com/gpu") || has(m, "insufficient amd.com/gpu")) {
      return "no node has the GPUs free that a pod asks for: it waits until one has (or the "
             "Cluster Autoscaler adds one); fewer train.gpus or another gpuType may fit";
    }
    if (has(m, "insufficient memory") || has(m, "insufficient cpu")) {
      return "no node has the CPU or memory free that a pod asks for: it waits; lower "
             "train.cpu or train.memory, or wait for others' pods to end";
    }
    if (has(m, "didn't match pod's node affinity") || has(m, "node selector")) {
      return "no node matches the pod's placement (gpuType, CUDA version, nodeSelector): "
             "ktrain status says which";
    }
    if (has(m, "untolerated taint") || has(m, "had taint")) {
      return "the nodes that fit carry a taint the pod does not tolerate (scheduling.tolerations)";
    }
    if (has(m, "persistentvolumeclaim") || has(m, "unbound")) {
      return "a volume claim the pod mounts is not bound yet: check train.volumes' claim";
    }
    return "no node can take the pod now: it stays Pending until one can";
  }
  if (reason == "Failed" && (has(m, "pull") || has(m, "image"))) {
    if (has(m, "not found") || has(m, "manifest unknown")) {
      return "the image does not exist in the registry: check the name and tag (ktrain build "
             "pushes by digest; ktrain validate says which image runs)";
    }
    if (has(m, "unauthorized") || has(m, "denied") || has(m, "403") || has(m, "401")) {
      return "the registry refused the node's credentials: an imagePullSecret for it is missing";
    }
    return "the node cannot pull the image; the kubelet tries again, waiting longer each time";
  }
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" ||
      (reason == "BackOff" && has(m, "pull"))) {
    return "the image cannot be pulled: the kubelet waits, then tries again";
  }
  if (reason == "BackOff") {
    return "the container keeps failing: the kubelet waits longer before each restart "
           "(ktrain logs --previous shows the last attempt)";
  }
  if (reason == "OOMKilled" || reason == "OOMKilling") {
    return "a process passed its memory limit and was killed: raise train.memory, or use less";
  }
  if (reason == "Evicted") {
    return "the kubelet evicted the pod: its node ran short of memory or disk";
  }
  if (reason == "Preempted" || reason == "Preempting") {
    return "a pod of higher priority took the node: the rank stops (scheduling.priority; "
           "train.retry with disruption decides whether it counts)";
  }
  if (reason == "TriggeredScaleUp") return "the Cluster Autoscaler is adding a node for the pod";
  if (reason == "NotTriggerScaleUp") {
    return "the Cluster Autoscaler cannot add a node that fits the pod (its node groups are at "
           "their maximum, or none has what it asks for)";
  }
  if (reason == "FailedMount" || reason == "FailedAttachVolume") {
    return "a volume cannot be mounted: does the claim or ConfigMap in train.volumes exist, "
           "and is it bound?";
  }
  if (reason == "FailedCreate" || reason == "FailedCreatePod") {
    if (has(m, "exceeded quota")) {
      return "the namespace's ResourceQuota refuses the pod: ask for less, or have an admin "
             "raise it (ktrain setup --check)";
    }
    return "the controller cannot create the run's pods";
  }
  if (reason == "BackoffLimitExceeded") {
    return "the pods failed more often than train.restarts allows: the run failed";
  }
  if (reason == "DeadlineExceeded") return "the run passed train.deadline: it was stopped";
  if (reason == "PodFailurePolicy") {
    return "a train.retry rule (or ktrain's own, for the launcher's exit codes) failed the run";
  }
  if (reason == "Unhealthy") return "a probe failed (serve.probe): the kubelet may restart it";
  if (reason == "Killing") {
    return "the kubelet is stopping the container (a stop, a delete, preemption or a failed "
           "probe)";
  }
  if (reason == "NodeNotReady") return "the pod's node stopped answering";
  return "";
}

std::vector<RunEvent> run_events(const std::vector<json>& events) {
  std::vector<RunEvent> out;
  out.reserve(events.size());
  for (const auto& e : events) {
    RunEvent ev;
    ev.first = event_time(e, true);
    ev.last = event_time(e, false);
    ev.count = std::max(1, integer(e.value("count", json(1)), 1));
    if (const int n = integer(at_path(e, {"series", "count"}), 0); n > ev.count) ev.count = n;
    ev.type = e.value("type", "");
    ev.reason = e.value("reason", "");
    ev.message = e.value("message", "");
    std::string kind = ascii_lower(str(e, {"involvedObject", "kind"}));
    ev.object = (kind.empty() ? "" : kind + "/") + str(e, {"involvedObject", "name"});
    ev.source = str(e, {"source", "component"});
    if (ev.source.empty()) ev.source = e.value("reportingComponent", "");
    ev.meaning = event_meaning(ev.reason, ev.message);
    out.push_back(std::move(ev));
  }
  std::stable_sort(out.begin(), out.end(), [](const RunEvent& a, const RunEvent& b) {
    const auto ta = a.last ? *a.last : std::chrono::system_clock::time_point{};
    const auto tb = b.last ? *b.last : std::chrono::system_clock::time_point{};
    return ta < tb;
  });
  return out;
}

}  // namespace ktrain::kube
