#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kube/prometheus_text.h"

using ktrain::kube::parse_prometheus_text;
using ktrain::kube::PromLimits;

TEST_CASE("prometheus text: samples with labels, comments, blank lines and timestamps") {
  const std::string text =
      "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
      "\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 98\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\", UUID=\"GPU-b\",} 97 1700000000123\r\n"
      "up 1\n";
  const auto p = parse_prometheus_text(text);
  REQUIRE(p.samples.size() == 3);
  CHECK(p.skipped_lines == 0);
  CHECK(p.samples[0].name == "DCGM_FI_DEV_GPU_UTIL");
  CHECK(p.samples[0].label("modelName") == "NVIDIA H100 80GB HBM3");
  CHECK(p.samples[0].value == 98);
  CHECK(!p.samples[0].timestamp_ms);
  CHECK(p.samples[1].label("UUID") == "GPU-b");
  CHECK(p.samples[1].timestamp_ms == 1700000000123);
  CHECK(p.samples[2].labels.empty());
  CHECK(p.samples[2].label("gpu").empty());
}

TEST_CASE("prometheus text: escaped label values are unescaped; other escapes skip the line") {
  const auto p = parse_prometheus_text(
      "m{pod=\"a\\\"b\\\\c\\nd\"} 1\n"
      "m{pod=\"bad\\t\"} 2\n"
      "m{pod=\"unterminated} 3\n"
      "m{pod=\"x\",pod=\"y\"} 4\n"
      "m{1pod=\"x\"} 5\n");
  REQUIRE(p.samples.size() == 1);
  CHECK(p.samples[0].label("pod") == "a\"b\\c\nd");
  CHECK(p.skipped_lines == 4);
}

TEST_CASE("prometheus text: NaN and infinities are values; garbage is not") {
  const auto p = parse_prometheus_text(
      "a NaN\nb +Inf\nc -Inf\nd 1.5e3\ne -0.25\nf nope\ng 12abc\nh\ni 1 2 3\nj 1 1.5\n");
  REQUIRE(p.samples.size() == 5);
  CHECK(std::isnan(p.samples[0].value));
  CHECK(std::isinf(p.samples[1].value));
  CHECK(p.samples[1].value > 0);
  CHECK(p.samples[2].value < 0);
  CHECK(p.samples[3].value == 1500);
  CHECK(p.samples[4].value == -0.25);
  CHECK(p.skipped_lines == 5);
}

TEST_CASE("prometheus text: a duplicate series keeps the first; label order does not matter") {
  const auto p = parse_prometheus_text(
      "m{a=\"1\",b=\"2\"} 10\n"
      "m{b=\"2\",a=\"1\"} 20\n"
      "m{a=\"1\",b=\"3\"} 30\n");
  REQUIRE(p.samples.size() == 2);
  CHECK(p.samples[0].value == 10);
  CHECK(p.samples[1].value == 30);
  CHECK(p.duplicates == 1);
}

TEST_CASE("prometheus text: a huge line is skipped, the lines around it are kept") {
  std::string text = "before 1\nhuge{v=\"" + std::string(1 << 20, 'x') + "\"} 2\nafter 3\n";
  const auto p = parse_prometheus_text(text);
  REQUIRE(p.samples.size() == 2);
  CHECK(p.samples[0].name == "before");
  CHECK(p.samples[1].name == "after");
  CHECK(p.skipped_lines == 1);
}

TEST_CASE("prometheus text: samples past the limit are dropped and the parse says so") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "m{i=\"" + std::to_string(i) + "\"} 1\n";
  PromLimits limits;
  limits.max_samples = 10;
  const auto p = parse_prometheus_text(text, {}, limits);
  CHECK(p.samples.size() == 10);
  CHECK(p.truncated);
}

TEST_CASE("prometheus text: only the wanted names are kept, and binary garbage is harmless") {
  std::string text = "keep 1\nskip{x=\"\\q\"} 2\n";
  text += std::string("\0\xff\x01{}\"\\ 9\n", 10);
  text += "keep{a=\"b\"} 3";  // no final newline
  const auto p = parse_prometheus_text(text, [](std::string_view n) { return n == "keep"; });
  REQUIRE(p.samples.size() == 2);
  CHECK(p.samples[1].value == 3);
  CHECK(p.skipped_lines == 1);  // the garbage line; the unwanted one is not looked at
}
