#include "base/duration.h"

#include <doctest/doctest.h>

using ktrain::format_duration;
using ktrain::parse_duration_seconds;

TEST_CASE("duration: single units") {
  CHECK(*parse_duration_seconds("90s") == 90);
  CHECK(*parse_duration_seconds("30m") == 1800);
  CHECK(*parse_duration_seconds("24h") == 86400);
  CHECK(*parse_duration_seconds("7d") == 604800);
  CHECK(*parse_duration_seconds("0s") == 0);
}

TEST_CASE("duration: combinations, largest unit first") {
  CHECK(*parse_duration_seconds("1h30m") == 5400);
  CHECK(*parse_duration_seconds("1d12h") == 129600);
  CHECK(*parse_duration_seconds("1d2h3m4s") == 93784);
}

TEST_CASE("duration: invalid text") {
  for (const char* bad : {"", "24", "h", "1x", "1h1h", "30m1h", "1.5h", "-1h", "1 h", "1H",
                          "99999999999999999999s", "9999999999999999d"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_duration_seconds(bad).has_value());
  }
}

TEST_CASE("duration: formatting") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(86400) == "1d");
  CHECK(format_duration(5400) == "1h30m");
  CHECK(format_duration(93784) == "1d2h3m4s");
}
