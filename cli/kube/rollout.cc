#include "kube/rollout.h"

namespace ktrain::kube {

namespace {

using nlohmann::json;

long long num(const json& obj, const char* a, const char* b, long long fallback = 0) {
  auto ia = obj.find(a);
  if (ia == obj.end() || !ia->is_object()) return fallback;
  auto ib = ia->find(b);
  if (ib == ia->end() || !ib->is_number_integer()) return fallback;
  return ib->get<long long>();
}

}  // namespace

RolloutState rollout_state(const json& d) {
  RolloutState s;
  const std::string name = d.contains("metadata") ? d["metadata"].value("name", "") : "";
  const long long generation = num(d, "metadata", "generation");
  const long long observed = num(d, "status", "observedGeneration");
  if (generation > observed) {
    s.message = "Waiting for deployment spec update to be observed...";
    return s;
  }
  if (d.contains("status") && d["status"].contains("conditions")) {
    for (const auto& c : d["status"]["conditions"]) {
      if (c.value("type", "") == "Progressing" &&
          c.value("reason", "") == "ProgressDeadlineExceeded") {
        s.failed = true;
        s.message = "deployment \"" + name + "\" exceeded its progress deadline";
        return s;
      }
    }
  }
  const long long updated = num(d, "status", "updatedReplicas");
  const long long replicas = num(d, "status", "replicas");
  const long long available = num(d, "status", "availableReplicas");
  const bool has_spec_replicas = d.contains("spec") && d["spec"].contains("replicas") &&
                                 d["spec"]["replicas"].is_number_integer();
  const long long want = has_spec_replicas ? d["spec"]["replicas"].get<long long>() : 0;
  const std::string waiting = "Waiting for deployment \"" + name + "\" rollout to finish: ";
  if (has_spec_replicas && updated < want) {
    s.message = waiting + std::to_string(updated) + " out of " + std::to_string(want) +
                " new replicas have been updated...";
  } else if (replicas > updated) {
    s.message =
        waiting + std::to_string(replicas - updated) + " old replicas are pending termination...";
  } else if (available < updated) {
    s.message = waiting + std::to_string(available) + " of " + std::to_string(updated) +
                " updated replicas are available...";
  } else {
    s.done = true;
    s.message = "deployment \"" + name + "\" successfully rolled out";
  }
  return s;
}

namespace {

/// The condition `type` of `obj`'s status, or null.
const json* condition(const json& obj, const std::string& type) {
  if (!obj.contains("status") || !obj["status"].is_object()) return nullptr;
  const auto& st = obj["status"];
  if (!st.contains("conditions") || !st["conditions"].is_array()) return nullptr;
  for (const auto& c : st["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string said(const json& c) {
  std::string out = c.value("reason", "");
  const std::string msg = c.value("message", "");
  if (!msg.empty()) out += (out.empty() ? "" : ": ") + msg;
  return out;
}

}  // namespace

RolloutState target_ready_state(const json& obj) {
  const std::string kind = obj.value("kind", "");
  const std::string name = obj.contains("metadata") ? obj["metadata"].value("name", "") : "";
  RolloutState s;
  if (kind == "InferenceService") {
    const json* ready = condition(obj, "Ready");
    if (ready && ready->value("status", "") == "True") {
      s.done = true;
      s.message = "inferenceservice \"" + name + "\" is ready";
      if (obj["status"].contains("url")) s.message += " at " + obj["status"].value("url", "");
      return s;
    }
    s.message = "Waiting for inferenceservice \"" + name + "\" to be ready";
    // The predictor's own condition says why, when KServe has one.
    const json* pred = condition(obj, "PredictorReady");
    const json* why = pred && pred->value("status", "") == "False" ? pred : ready;
    if (why && !said(*why).empty()) s.message += ": " + said(*why);
    // KServe's words for pods that will not come up by themselves.
    if (obj.contains("status") && obj["status"].contains("modelStatus")) {
      const auto& ms = obj["status"]["modelStatus"];
      const std::string reason =
          ms.contains("lastFailureInfo") ? ms["lastFailureInfo"].value("reason", "") : "";
      if (ms.value("transitionStatus", "") == "BlockedByFailedLoad" ||
          reason == "ModelLoadFailed") {
        s.failed = true;
        s.message =
            "inferenceservice \"" + name + "\" failed to load its model" +
            (ms.contains("lastFailureInfo") ? ": " + ms["lastFailureInfo"].value("message", reason)
                                            : "");
      }
    }
    return s;
  }
  if (kind == "LeaderWorkerSet") {
    const long long want = obj.contains("spec") ? obj["spec"].value("replicas", 1LL) : 1;
    const long long ready = obj.contains("status") ? obj["status"].value("readyReplicas", 0LL) : 0;
    const json* available = condition(obj, "Available");
    if (available && available->value("status", "") == "True" && ready >= want) {
      s.done = true;
      s.message = "leaderworkerset \"" + name + "\": " + std::to_string(ready) + " of " +
                  std::to_string(want) + " groups ready";
      return s;
    }
    s.message = "Waiting for leaderworkerset \"" + name + "\": " + std::to_string(ready) + " of " +
                std::to_string(want) + " groups ready";
    const json* progressing = condition(obj, "Progressing");
    if (progressing && !said(*progressing).empty()) s.message += " (" + said(*progressing) + ")";
    return s;
  }
  return rollout_state(obj);
}

}  // namespace ktrain::kube
