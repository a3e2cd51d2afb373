#include "base/duration.h"

#include <limits>

namespace ktrain {

std::optional<std::int64_t> parse_duration_seconds(std::string_view s) {
  if (s.empty()) return std::nullopt;
  static constexpr std::string_view kUnits = "dhms";
  static constexpr std::int64_t kFactors[] = {86400, 3600, 60, 1};
  std::int64_t total = 0;
  std::size_t last_unit = 0;  // index into kUnits + 1 of the previous unit; enforces order
  std::size_t i = 0;
  while (i < s.size()) {
    std::int64_t n = 0;
    std::size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return std::nullopt;
      n = n * 10 + (s[i++] - '0');
      ++digits;
    }
    if (digits == 0 || i == s.size()) return std::nullopt;
    auto u = kUnits.find(s[i++]);
    if (u == std::string_view::npos || u + 1 <= last_unit) return std::nullopt;
    last_unit = u + 1;
    if (n > std::numeric_limits<std::int64_t>::max() / kFactors[u]) return std::nullopt;
    std::int64_t add = n * kFactors[u];
    if (total > std::numeric_limits<std::int64_t>::max() - add) return std::nullopt;
    total += add;
  }
  return total;
}

std::string format_duration(std::int64_t seconds) {
  if (seconds == 0) return "0s";
  static constexpr char kUnits[] = {'d', 'h', 'm', 's'};
  static constexpr std::int64_t kFactors[] = {86400, 3600, 60, 1};
  std::string out;
  for (int i = 0; i < 4; ++i) {
    if (seconds >= kFactors[i]) {
      out += std::to_string(seconds / kFactors[i]) + kUnits[i];
      seconds %= kFactors[i];
    }
  }
  return out;
}

}  // namespace ktrain
