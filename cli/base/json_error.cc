#include "base/json_error.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace ktrain {

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    if (auto close = text.find("] "); close != std::string::npos) text.erase(0, close + 2);
  }
  // The parser's words are "...- <what was wrong>; last read: '<the bytes>'" and then,
  // maybe, "; expected <a kind of token>". Only the kinds of tokens are kept.
  const auto last_read = text.find("; last read: '");
  if (last_read == std::string::npos) return text;
  std::string out = text.substr(0, last_read);
  static constexpr std::array<std::string_view, 16> kTokens = {"<uninitialized>",
                                                               "true literal",
                                                               "false literal",
                                                               "null literal",
                                                               "string literal",
                                                               "number literal",
                                                               "'['",
                                                               "'{'",
                                                               "']'",
                                                               "'}'",
                                                               "':'",
                                                               "','",
                                                               "<parse error>",
                                                               "end of input",
                                                               "'[', '{', or a literal",
                                                               "unknown token"};
  constexpr std::string_view kExpected = "; expected ";
  const auto expected = text.rfind(kExpected);
  if (expected != std::string::npos && expected > last_read) {
    const std::string_view what = std::string_view(text).substr(expected + kExpected.size());
    if (std::find(kTokens.begin(), kTokens.end(), what) != kTokens.end()) {
      out += std::string(kExpected) + std::string(what);
    }
  }
  return out;
}

}  // namespace ktrain
