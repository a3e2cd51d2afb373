#pragma once
// The Prometheus text exposition format (version 0.0.4), as exporters such as NVIDIA's
// DCGM exporter serve it on /metrics: one sample a line, `name{label="value",...} value
// [timestamp]`, with # comments. Parsed defensively: the text comes from another program
// through the API server, so a line that does not parse is skipped and counted, never
// fatal, and every size is bounded.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktrain::kube {

/// One sample: a metric name, its labels (in the order written) and its value.
struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;  ///< may be NaN or +-Inf, as written
  std::optional<std::int64_t> timestamp_ms;

  /// The value of label `key`, or "" when it has none.
  std::string_view label(std::string_view key) const;
};

/// Limits on what a parse keeps.
struct PromLimits {
  std::size_t max_line_bytes = 64 * 1024;  ///< longer lines are skipped
  std::size_t max_samples = 200'000;       ///< samples past this are dropped
  std::size_t max_labels = 64;             ///< a sample with more labels is skipped
};

/// What a parse found.
struct PromParse {
  std::vector<PromSample> samples;
  std::size_t skipped_lines = 0;  ///< lines that did not parse, or were too long
  std::size_t duplicates = 0;     ///< samples of a series already seen (the first is kept)
  bool truncated = false;         ///< max_samples was reached
};

/// Parses `text`. Only samples whose name `wanted` accepts are kept (all when it is
/// empty); the others are skipped without looking at their labels. Never throws for
/// bad input.
PromParse parse_prometheus_text(std::string_view text,
                                const std::function<bool(std::string_view name)>& wanted = {},
                                const PromLimits& limits = {});

}  // namespace ktrain::kube
