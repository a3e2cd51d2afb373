#include <doctest/doctest.h>

#include "base/timefmt.h"

using namespace std::chrono;
using ktrain::format_age;
using ktrain::format_rfc3339;
using ktrain::format_rfc3339_nanos;
using ktrain::parse_rfc3339;

TEST_CASE("timefmt: RFC 3339 with nanoseconds round-trips") {
  const auto t = system_clock::time_point(seconds(1796059720)) + nanoseconds(123456789);
  const std::string s = format_rfc3339_nanos(t);
  CHECK(s == "2026-11-30T17:28:40.123456789Z");
  auto back = parse_rfc3339(s);
  REQUIRE(back);
  CHECK(*back == t);
  CHECK(format_rfc3339(t) == "2026-11-30T17:28:40Z");
}

TEST_CASE("timefmt: offsets and short fractions parse; garbage does not") {
  auto a = parse_rfc3339("2026-11-30T18:28:40.5+01:00");
  REQUIRE(a);
  CHECK(format_rfc3339_nanos(*a) == "2026-11-30T17:28:40.500000000Z");
  CHECK_FALSE(parse_rfc3339("2026-11-30 17:28:40Z"));
  CHECK_FALSE(parse_rfc3339("2026-11-30T17:28:40"));
  CHECK_FALSE(parse_rfc3339("2026-11-30T17:28:4xZ"));
  CHECK_FALSE(parse_rfc3339("2026-11-30T17:28:40.Z"));
  CHECK_FALSE(parse_rfc3339("2026-13-30T17:28:40Z"));
  CHECK_FALSE(parse_rfc3339("2026-11-00T17:28:40Z"));
  CHECK_FALSE(parse_rfc3339("2026-11-30T24:28:40Z"));
  CHECK_FALSE(parse_rfc3339("2026-11-30T17:60:40Z"));
}

TEST_CASE("timefmt: ages read like kubectl's") {
  CHECK(format_age(seconds(5)) == "5s");
  CHECK(format_age(seconds(150)) == "2m30s");
  CHECK(format_age(minutes(45)) == "45m");
  CHECK(format_age(minutes(200)) == "3h20m");
  CHECK(format_age(hours(30)) == "30h");
  CHECK(format_age(hours(24 * 9)) == "9d");
  CHECK(format_age(seconds(-3)) == "0s");
}

TEST_CASE("parse_rfc3339: times that system_clock cannot hold are malformed, not overflowed") {
  // Found by tests/fuzz (log_lines): a log line's timestamp in the year 9999 overflowed
  // the nanosecond count.
  CHECK_FALSE(parse_rfc3339("9999-12-31T23:59:59Z"));
  CHECK_FALSE(parse_rfc3339("2263-01-01T00:00:00Z"));
  CHECK_FALSE(parse_rfc3339("1000-01-01T00:00:00Z"));
  CHECK_FALSE(parse_rfc3339("1600-01-01T00:00:00.5+01:00"));
  CHECK(parse_rfc3339("2261-12-31T23:59:59.999999999Z"));
  CHECK(parse_rfc3339("1700-01-01T00:00:00Z"));
}
