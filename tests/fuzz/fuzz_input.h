#pragma once
// Helpers shared by the fuzz targets: cutting one input into several parts.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ktrain::fuzz {

/// The separator between the parts of an input that feeds several parsers (a line
/// that holds only "----"); seeds and dictionaries use it too.
inline constexpr std::string_view kPartSeparator = "\n----\n";

/// Cuts `data` at each kPartSeparator into at most `max_parts` parts (the last part
/// keeps any further separators); missing parts are empty.
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t max_parts) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = rest.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.emplace_back(rest.substr(0, at));
    rest.remove_prefix(at + kPartSeparator.size());
  }
  parts.emplace_back(rest);
  parts.resize(max_parts);
  return parts;
}

/// Cuts `text` into chunks whose sizes come from `sizes` (one byte each, 1..256,
/// cycled), as a network would deliver a stream.
inline std::vector<std::string_view> chunks(std::string_view text, std::string_view sizes) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (!text.empty()) {
    size_t n =
        sizes.empty() ? text.size() : static_cast<unsigned char>(sizes[i++ % sizes.size()]) + 1u;
    n = std::min(n, text.size());
    out.push_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace ktrain::fuzz
