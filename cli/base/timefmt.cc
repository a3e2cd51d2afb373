#include "base/timefmt.h"

#include <ctime>

#include <fmt/format.h>

namespace ktrain {

namespace {

std::string format_with_fraction(std::chrono::system_clock::time_point t, bool nanos) {
  using namespace std::chrono;
  const auto since_epoch = t.time_since_epoch();
  auto secs = duration_cast<seconds>(since_epoch);
  auto ns = duration_cast<nanoseconds>(since_epoch - secs).count();
  if (ns < 0) {
    secs -= seconds(1);
    ns += 1'000'000'000;
  }
  std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (nanos) out += fmt::format(".{:09}", ns);
  out += "Z";
  return out;
}

int digits(std::string_view s, size_t pos, size_t n, bool& ok) {
  int v = 0;
  if (pos + n > s.size()) {
    ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') ok = false;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::string format_rfc3339_nanos(std::chrono::system_clock::time_point t) {
  return format_with_fraction(t, true);
}

std::string format_rfc3339(std::chrono::system_clock::time_point t) {
  return format_with_fraction(t, false);
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s) {
  bool ok = true;
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = digits(s, 0, 4, ok) - 1900;
  tm.tm_mon = digits(s, 5, 2, ok) - 1;
  tm.tm_mday = digits(s, 8, 2, ok);
  tm.tm_hour = digits(s, 11, 2, ok);
  tm.tm_min = digits(s, 14, 2, ok);
  tm.tm_sec = digits(s, 17, 2, ok);
  if (!ok || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  size_t pos = 19;
  long long nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (; n < 9; ++n) nanos *= 10;
  }
  long offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '-' ? -1 : 1;
    if (pos + 6 > s.size() || s[pos + 3] != ':') return std::nullopt;
    offset = sign * (digits(s, pos + 1, 2, ok) * 3600L + digits(s, pos + 4, 2, ok) * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (!ok || pos != s.size()) return std::nullopt;
  const std::time_t tt = timegm(&tm) - offset;
  // system_clock counts nanoseconds in 64 bits: from 1677 to 2262. A time outside that
  // cannot be represented, and is as malformed as a 13th month.
  constexpr auto kMaxSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::duration::max())
          .count() -
      1;
  if (tt < -kMaxSeconds || tt > kMaxSeconds) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(tt) + std::chrono::nanoseconds(nanos)));
}

std::string format_age(std::chrono::system_clock::duration d) {
  using namespace std::chrono;
  long long s = duration_cast<seconds>(d).count();
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{}s", s);
  const long long m = s / 60;
  if (m < 10) return s % 60 ? fmt::format("{}m{}s", m, s % 60) : fmt::format("{}m", m);
  if (m < 180) return fmt::format("{}m", m);
  const long long h = m / 60;
  if (h < 8) return m % 60 ? fmt::format("{}h{}m", h, m % 60) : fmt::format("{}h", h);
  if (h < 48) return fmt::format("{}h", h);
  return fmt::format("{}d", h / 24);
}

}  // namespace ktrain
