// What following a pod's log needs to know of it (kube/pod_view.h).
#include "kube/pod_view.h"

#include <set>
#include <tuple>

#include "kube/run_state.h"

namespace ktrain::kube {

using nlohmann::json;

ContainerState container_state(const json& pod, const std::string& container) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return ContainerState::kNone;
  auto cs = st->find("containerStatuses");
  if (cs == st->end() || !cs->is_array()) return ContainerState::kNone;
  for (const auto& c : *cs) {
    if (!c.is_object() || c.value("name", "") != container) continue;
    auto state = c.find("state");
    if (state == c.end() || !state->is_object()) return ContainerState::kNone;
    if (state->contains("terminated")) return ContainerState::kTerminated;
    if (state->contains("running")) return ContainerState::kRunning;
    if (state->contains("waiting")) return ContainerState::kWaiting;
  }
  return ContainerState::kNone;
}

std::pair<std::string, std::string> blocked_start(const json& pod, const std::string& container) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return {};
  auto key_of = [](const std::string& reason) {
    return reason == "ImagePullBackOff" ? std::string("ErrImagePull") : reason;
  };
  auto waiting_text = [](const json& w) {
    std::string text = w.value("reason", "");
    if (auto m = w.value("message", ""); !m.empty()) text += ": " + m;
    return text;
  };
  if (auto cs = st->find("containerStatuses"); cs != st->end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (!c.is_object() || c.value("name", "") != container) continue;
      auto state = c.find("state");
      if (state == c.end() || !state->is_object()) break;
      auto w = state->find("waiting");
      if (w == state->end() || !w->is_object()) return {};
      const std::string reason = w->value("reason", "");
      if (!reason.empty() && reason != "ContainerCreating" && reason != "PodInitializing") {
        return {waiting_text(*w), key_of(reason)};
      }
    }
  }
  if (auto ics = st->find("initContainerStatuses"); ics != st->end() && ics->is_array()) {
    for (const auto& c : *ics) {
      if (!c.is_object()) continue;
      const std::string name = c.value("name", "");
      auto state = c.find("state");
      if (state == c.end() || !state->is_object()) return {};
      if (auto t = state->find("terminated"); t != state->end() && t->is_object()) {
        const int code = t->value("exitCode", 0);
        if (code == 0) continue;
        return {"init container " + name + " exited " + std::to_string(code),
                "init:" + name + ":exit"};
      }
      auto w = state->find("waiting");
      if (w == state->end() || !w->is_object()) return {};
      const std::string reason = w->value("reason", "");
      if (reason.empty() || reason == "PodInitializing") return {};
      return {"init container " + name + ": " + waiting_text(*w),
              "init:" + name + ":" + key_of(reason)};
    }
  }
  return {};
}

std::pair<std::string, std::string> waiting_reason(const json& pod, const std::string& container) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return {};
  auto of = [](const json& c) -> std::pair<std::string, std::string> {
    auto state = c.find("state");
    if (state == c.end() || !state->is_object()) return {};
    auto w = state->find("waiting");
    if (w == state->end() || !w->is_object()) return {};
    return {w->value("reason", ""), w->value("message", "")};
  };
  if (auto ics = st->find("initContainerStatuses"); ics != st->end() && ics->is_array()) {
    for (const auto& c : *ics) {
      if (!c.is_object()) continue;
      auto waiting = of(c);
      if (!waiting.first.empty() && waiting.first != "PodInitializing") return waiting;
    }
  }
  if (auto cs = st->find("containerStatuses"); cs != st->end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (c.is_object() && c.value("name", "") == container) return of(c);
    }
  }
  return {};
}

void read_pod_view(PodView& pv, const json& pod, const std::string& container) {
  auto md = pod.find("metadata");
  if (md != pod.end() && md->is_object()) {
    pv.name = md->value("name", "");
    pv.created = md->value("creationTimestamp", "");
    if (auto refs = md->find("ownerReferences"); refs != md->end() && refs->is_array()) {
      for (const auto& r : *refs) {
        if (r.is_object() && r.value("controller", false)) pv.owner_uid = r.value("uid", "");
      }
    }
  }
  if (auto st = pod.find("status"); st != pod.end() && st->is_object()) {
    pv.phase = st->value("phase", "");
  }
  if (pv.container.empty()) pv.container = container.empty() ? log_container(pod) : container;
  const auto cs = container_state(pod, pv.container);
  if (cs != ContainerState::kNone) pv.state = cs;
  std::tie(pv.blocked, pv.blocked_key) = blocked_start(pod, pv.container);
}

bool every_index_succeeded(const std::map<std::string, PodView>& pods, const std::string& job_uid,
                           int indexes) {
  if (indexes <= 0 || job_uid.empty()) return false;
  std::set<int> succeeded;
  for (const auto& [uid, pv] : pods) {
    if (pv.phase == "Succeeded" && pv.owner_uid == job_uid && pv.index >= 0 && pv.index < indexes) {
      succeeded.insert(pv.index);
    }
  }
  return static_cast<int>(succeeded.size()) == indexes;
}

}  // namespace ktrain::kube
