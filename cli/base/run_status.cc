#include "base/run_status.h"

namespace ktrain {

const char* to_string(RunState s) {
  switch (s) {
    case RunState::kPending:
      return "Pending";
    case RunState::kRunning:
      return "Running";
    case RunState::kSucceeded:
      return "Succeeded";
    case RunState::kFailed:
      return "Failed";
    case RunState::kStopped:
      return "Stopped";
    case RunState::kUnknown:
      break;
  }
  return "Unknown";
}

std::string status_fingerprint(const RunStatus& s) {
  std::string f;
  auto add = [&f](const std::string& v) {
    f += v;
    f += '\x1f';
  };
  add(s.summary.name);
  add(to_string(s.summary.state));
  add(std::to_string(s.summary.nodes) + "x" + std::to_string(s.summary.gpus));
  for (const auto& c : s.conditions) add(c);
  f += '\x1e';
  for (const auto& e : s.explanations) add(e);
  f += '\x1e';
  add(s.checkpoint);  // a new checkpoint (its age alone does not count)
  for (const auto& r : s.ranks) {
    add(std::to_string(r.index));
    add(r.pod);
    add(r.phase);
    add(r.node);
    add(std::to_string(r.restarts));
    add(r.exit_code ? std::to_string(*r.exit_code) : "-");
    add(r.reason);
    add(r.message);
    f += '\x1e';
  }
  add(std::to_string(s.first_failed));
  add(s.started ? std::to_string(s.started->time_since_epoch().count()) : "");
  add(s.finished ? std::to_string(s.finished->time_since_epoch().count()) : "");
  return f;
}

}  // namespace ktrain
