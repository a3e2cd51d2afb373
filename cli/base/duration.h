#pragma once
// Durations in project files: 90s, 30m, 24h, 7d, and combinations such as 1h30m.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ktrain {

/// Whole seconds in `s`, a sequence of <digits><unit> with units s, m, h, d
/// (each unit at most once, largest first: "1d12h", "1h30m", "90s"), or nullopt when
/// `s` is not such a duration or overflows.
std::optional<std::int64_t> parse_duration_seconds(std::string_view s);

/// Formats `seconds` in the largest units that fit exactly: 86400 -> "1d", 5400 -> "1h30m".
std::string format_duration(std::int64_t seconds);

}  // namespace ktrain
