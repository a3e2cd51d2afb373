#include "kube/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace ktrain::kube {

std::string_view PromSample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

void skip_blanks(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

/// A float as the format writes it: decimal or exponent notation, NaN, +Inf, -Inf.
std::optional<double> parse_value(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf" || s == "inf" || s == "+inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (s == "-Inf" || s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  // from_chars takes "nan" and "inf" spelt any way; only the spellings above count.
  if (std::isnan(v) || std::isinf(v)) return std::nullopt;
  return v;
}

/// Parses one sample line (not a comment, not blank); false when it is malformed.
bool parse_line(std::string_view line, PromSample& out, const PromLimits& limits,
                const std::function<bool(std::string_view)>& wanted, bool& unwanted) {
  std::size_t i = 0;
  skip_blanks(line, i);
  const std::size_t name_begin = i;
  if (i >= line.size() || !(name_start(line[i]) || line[i] == ':')) return false;
  while (i < line.size() && (name_char(line[i]) || line[i] == ':')) ++i;
  const std::string_view name = line.substr(name_begin, i - name_begin);
  if (wanted && !wanted(name)) {
    unwanted = true;
    return true;
  }
  out.name.assign(name);
  out.labels.clear();
  out.timestamp_ms.reset();
  skip_blanks(line, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      skip_blanks(line, i);
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const std::size_t key_begin = i;
      if (i >= line.size() || !name_start(line[i])) return false;
      while (i < line.size() && name_char(line[i])) ++i;
      std::string key(line.substr(key_begin, i - key_begin));
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '=') return false;
      ++i;
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '"') return false;
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i >= line.size()) return false;
        const char e = line[i++];
        if (e == '\\') {
          value += '\\';
        } else if (e == '"') {
          value += '"';
        } else if (e == 'n') {
          value += '\n';
        } else {
          return false;  // the format has no other escapes
        }
      }
      if (!closed) return false;
      for (const auto& [k, v] : out.labels) {
        if (k == key) return false;  // a label given twice
      }
      if (out.labels.size() >= limits.max_labels) return false;
      out.labels.emplace_back(std::move(key), std::move(value));
      skip_blanks(line, i);
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      return false;
    }
    skip_blanks(line, i);
  }
  // The value, after at least one blank (skipped above, after the name or the labels).
  if (i == 0 || (line[i - 1] != ' ' && line[i - 1] != '\t')) return false;
  std::size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  const auto value = parse_value(line.substr(i, end - i));
  if (!value) return false;
  out.value = *value;
  i = end;
  skip_blanks(line, i);
  if (i < line.size()) {
    end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    const std::string_view ts = line.substr(i, end - i);
    std::int64_t t = 0;
    const auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
    if (ec != std::errc() || p != ts.data() + ts.size()) return false;
    out.timestamp_ms = t;
    i = end;
    skip_blanks(line, i);
    if (i < line.size()) return false;
  }
  return true;
}

/// The identity of a series: its name and its labels, sorted.
std::string series_key(const PromSample& s) {
  auto labels = s.labels;
  std::sort(labels.begin(), labels.end());
  std::string key = s.name;
  for (const auto& [k, v] : labels) {
    key += '\0';
    key += k;
    key += '\0';
    key += v;
  }
  return key;
}

}  // namespace

PromParse parse_prometheus_text(std::string_view text,
                                const std::function<bool(std::string_view name)>& wanted,
                                const PromLimits& limits) {
  PromParse out;
  std::unordered_set<std::string> seen;
  PromSample sample;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > limits.max_line_bytes) {
      ++out.skipped_lines;
      continue;
    }
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size() || line[i] == '#') continue;
    bool unwanted = false;
    if (!parse_line(line, sample, limits, wanted, unwanted)) {
      ++out.skipped_lines;
      continue;
    }
    if (unwanted) continue;
    if (out.samples.size() >= limits.max_samples) {
      out.truncated = true;
      break;
    }
    if (!seen.insert(series_key(sample)).second) {
      ++out.duplicates;
      continue;
    }
    out.samples.push_back(sample);
  }
  return out;
}

}  // namespace ktrain::kube
