#pragma once
// Small text helpers shared by the parsers and the verbs.

#include <string>
#include <string_view>

namespace ktrain {

/// `s` with ASCII letters lowercased; other bytes (UTF-8 included) kept as they are.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace ktrain
