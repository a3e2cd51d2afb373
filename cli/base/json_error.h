#pragma once
// Messages about JSON that does not parse, which say where and what was expected but
// never quote the text: it can be a password, a token or a key.

#include <string>

#include <nlohmann/json.hpp>

namespace ktrain {

/// nlohmann's message for `e` without its "[json.exception...]" prefix and without
/// the bytes it had read ("last read: '...'"): "parse error at line 3, column 12:
/// syntax error while parsing object - invalid literal; expected '}'".
std::string json_error_text(const nlohmann::json::exception& e);

}  // namespace ktrain
