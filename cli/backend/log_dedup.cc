// TimestampParser and LineDedup (log_dedup.h).
#include "backend/log_dedup.h"

#include <chrono>

#include "base/timefmt.h"

namespace ktrain::backend {

namespace {

std::int64_t to_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

std::optional<std::int64_t> TimestampParser::parse(std::string_view ts) {
  if (ts.size() < 20) return std::nullopt;
  size_t pos = 19;
  std::int64_t frac = 0;
  if (ts[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < ts.size() && ts[pos] >= '0' && ts[pos] <= '9') {
      if (n < 9) frac = frac * 10 + (ts[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (; n < 9; ++n) frac *= 10;
  }
  if (pos + 1 == ts.size() && (ts[pos] == 'Z' || ts[pos] == 'z')) {
    const std::string_view second = ts.substr(0, 19);
    if (second != second_) {
      auto t = parse_rfc3339(std::string(second) + "Z");
      if (!t) return std::nullopt;
      second_ = std::string(second);
      second_ns_ = to_ns(*t);
    }
    return second_ns_ + frac;
  }
  auto t = parse_rfc3339(ts);  // an offset instead of Z
  if (!t) return std::nullopt;
  return to_ns(*t);
}

void LineDedup::reconnect() {
  if (!has_last_) return;
  caught_up_ = false;
  repeated_at_last_ = 0;
}

bool LineDedup::accept(std::int64_t ts) {
  if (!caught_up_) {
    if (ts < last_) return false;
    if (ts == last_ && ++repeated_at_last_ <= delivered_at_last_) return false;
    caught_up_ = true;
  }
  if (!has_last_ || ts > last_) {
    has_last_ = true;
    last_ = ts;
    delivered_at_last_ = 1;
  } else if (ts == last_) {
    ++delivered_at_last_;
  }
  // ts < last_ on a connection that has caught up: out of order in the log itself;
  // delivered, and the resume point stays where it is.
  return true;
}
}  // namespace ktrain::backend
