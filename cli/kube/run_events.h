#pragma once
// The events about a run's objects, as `ktrain events` and `status --events` show them:
// oldest first, one per object and reason with its count, and what the reasons that
// matter (FailedScheduling, an image that cannot be pulled, OOM, preemption, the
// Cluster Autoscaler's, a quota) mean for the run, in one line each.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/run_status.h"

namespace ktrain::kube {

/// When an event happened last (`first`: first), from the events.k8s.io series, the
/// core/v1 timestamps, or when it was recorded.
std::optional<std::chrono::system_clock::time_point> event_time(const nlohmann::json& e,
                                                                bool first);

/// `events` (core/v1 Event objects) as a run's events, oldest (last seen) first.
std::vector<RunEvent> run_events(const std::vector<nlohmann::json>& events);

/// What an event of `reason` with `message` means for a run, in one line; "" when the
/// reason says it plainly (Scheduled, Pulled, Started, ...).
std::string event_meaning(const std::string& reason, const std::string& message);

}  // namespace ktrain::kube
