#pragma once
// Kubernetes timestamps (RFC 3339, UTC, optional fraction).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ktrain::kube {

/// Parses "2024-05-01T12:00:00Z", "2024-05-01T12:00:00.123456789Z" or with a "+02:00"
/// offset; nullopt when `s` is not such a time.
std::optional<std::chrono::system_clock::time_point> parse_time(std::string_view s);

/// Formats `t` as "2024-05-01T12:00:00Z" (whole seconds, UTC), as metav1.Time is written.
std::string format_time(std::chrono::system_clock::time_point t);

}  // namespace ktrain::kube
