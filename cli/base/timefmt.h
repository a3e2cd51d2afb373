#pragma once
// Timestamps as Kubernetes writes them (RFC 3339, UTC) and ages as kubectl shows them.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ktrain {

/// "2026-11-29T17:28:40.123456789Z".
std::string format_rfc3339_nanos(std::chrono::system_clock::time_point t);

/// "2026-11-29T17:28:40Z".
std::string format_rfc3339(std::chrono::system_clock::time_point t);

/// Parses RFC 3339 ("...Z" or "+hh:mm" offsets, optional fraction); nullopt if malformed.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s);

/// An age as kubectl prints it: "45s", "12m", "3h", "5d" (two units when short: "2m30s").
std::string format_age(std::chrono::system_clock::duration d);

}  // namespace ktrain
