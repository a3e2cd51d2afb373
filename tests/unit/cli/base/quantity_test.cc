#include "base/quantity.h"

#include <doctest/doctest.h>

using ktrain::is_quantity;
using ktrain::parse_quantity;
using ktrain::quantity_hint;

TEST_CASE("quantity: decimal, binary and exponent suffixes") {
  CHECK(*parse_quantity("2") == doctest::Approx(2));
  CHECK(*parse_quantity("500m") == doctest::Approx(0.5));
  CHECK(*parse_quantity("1.5") == doctest::Approx(1.5));
  CHECK(*parse_quantity(".5") == doctest::Approx(0.5));
  CHECK(*parse_quantity("3k") == doctest::Approx(3000));
  CHECK(*parse_quantity("64M") == doctest::Approx(64e6));
  CHECK(*parse_quantity("16Gi") == doctest::Approx(16.0 * 1024 * 1024 * 1024));
  CHECK(*parse_quantity("1Ki") == doctest::Approx(1024));
  CHECK(*parse_quantity("2Ei") == doctest::Approx(2.0 * 1152921504606846976.0));
  CHECK(*parse_quantity("1e3") == doctest::Approx(1000));
  CHECK(*parse_quantity("1E-2") == doctest::Approx(0.01));
  CHECK(*parse_quantity("1E") == doctest::Approx(1e18));
  CHECK(*parse_quantity("-1") == doctest::Approx(-1));
  CHECK(*parse_quantity("+4") == doctest::Approx(4));
}

TEST_CASE("quantity: invalid text") {
  for (const char* bad :
       {"", "Gi", "16GB", "16gi", "1.2.3", "abc", "16 Gi", "1e", "1ee3", "m", "16Ki2", "."}) {
    CAPTURE(bad);
    CHECK_FALSE(is_quantity(bad));
  }
}

TEST_CASE("quantity: near misses get a hint") {
  CHECK(quantity_hint("16GB") == "did you mean 16Gi?");
  CHECK(quantity_hint("16gi") == "did you mean 16Gi?");
  CHECK(quantity_hint("512mb") == "did you mean 512Mi?");
  CHECK(quantity_hint("abc").empty());
  CHECK(quantity_hint("16").empty());
  CHECK(quantity_hint("16xyz").empty());
}
