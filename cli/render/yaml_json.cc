#include "render/yaml_json.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "base/error.h"

namespace ktrain::render {

namespace {

using nlohmann::ordered_json;

const std::string kTagStr = "tag:yaml.org,2002:str";
const std::string kTagInt = "tag:yaml.org,2002:int";
const std::string kTagFloat = "tag:yaml.org,2002:float";
const std::string kTagBool = "tag:yaml.org,2002:bool";
const std::string kTagNull = "tag:yaml.org,2002:null";

std::string mark_of(const YAML::Node& node, const std::string& where) {
  const auto m = node.Mark();
  if (m.is_null()) return where;
  return where + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

bool is_null_word(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> bool_word(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

/// Whether `s` is one or more characters, each satisfying `ok`.
template <typename Pred>
bool all_chars(std::string_view s, Pred ok) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!ok(c)) return false;
  }
  return true;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/// An integer in YAML 1.2 core form (decimal, 0o octal, 0x hex), if `s` is one that fits.
std::optional<std::int64_t> int_word(const std::string& s) {
  const std::string_view v = s;
  const std::string_view unsigned_part =
      !v.empty() && (v[0] == '-' || v[0] == '+') ? v.substr(1) : v;
  try {
    if (all_chars(unsigned_part, is_digit)) return std::stoll(s, nullptr, 10);
    if (v.size() > 2 && v[0] == '0' && v[1] == 'o' &&
        all_chars(v.substr(2), [](char c) { return c >= '0' && c <= '7'; })) {
      return std::stoll(s.substr(2), nullptr, 8);
    }
    if (v.size() > 2 && v[0] == '0' && v[1] == 'x' && all_chars(v.substr(2), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c));
        })) {
      return std::stoll(s.substr(2), nullptr, 16);
    }
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
  return std::nullopt;
}

/// A float in YAML 1.2 core form: [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)?,
/// [-+]?.inf (any of .inf .Inf .INF) or .nan (.nan .NaN .NAN).
std::optional<double> float_word(const std::string& s) {
  const size_t n = s.size();
  size_t i = 0;
  const bool sign = n > 0 && (s[0] == '-' || s[0] == '+');
  if (sign) ++i;
  const std::string_view rest = std::string_view(s).substr(i);
  if (rest == ".inf" || rest == ".Inf" || rest == ".INF") {
    return s[0] == '-' ? -INFINITY : INFINITY;
  }
  if (!sign && (rest == ".nan" || rest == ".NaN" || rest == ".NAN")) return NAN;
  auto digits = [&] {
    const size_t start = i;
    while (i < n && is_digit(s[i])) ++i;
    return i - start;
  };
  bool ok;
  if (i < n && s[i] == '.') {
    ++i;
    ok = digits() > 0;
  } else {
    ok = digits() > 0;
    if (ok && i < n && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (ok && i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '-' || s[i] == '+')) ++i;
    ok = digits() > 0;
  }
  if (!ok || i != n) return std::nullopt;
  try {
    return std::stod(s);
  } catch (const std::out_of_range&) {
    return s[0] == '-' ? -INFINITY : INFINITY;
  }
}

ordered_json scalar_to_json(const YAML::Node& node, const std::string& where) {
  const std::string& s = node.Scalar();
  const std::string& tag = node.Tag();
  // "!" marks a quoted (or block) scalar: always a string.
  if (tag == "!" || tag == kTagStr) return s;
  if (tag == kTagInt) {
    if (auto i = int_word(s)) return *i;
    throw Error(mark_of(node, where) + ": '" + s + "' is tagged !!int but is not an integer");
  }
  if (tag == kTagFloat) {
    if (auto f = float_word(s)) return *f;
    if (auto i = int_word(s)) return static_cast<double>(*i);
    throw Error(mark_of(node, where) + ": '" + s + "' is tagged !!float but is not a number");
  }
  if (tag == kTagBool) {
    if (auto b = bool_word(s)) return *b;
    throw Error(mark_of(node, where) + ": '" + s + "' is tagged !!bool but is not true/false");
  }
  if (tag == kTagNull) return nullptr;
  if (tag != "?" && !tag.empty()) {
    throw Error(mark_of(node, where) + ": unsupported YAML tag '" + tag + "'");
  }
  if (is_null_word(s)) return nullptr;
  if (auto b = bool_word(s)) return *b;
  if (auto i = int_word(s)) return *i;
  if (auto f = float_word(s)) return *f;
  return s;
}

}  // namespace

ordered_json yaml_to_json(const YAML::Node& node, const std::string& where) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar_to_json(node, where);
    case YAML::NodeType::Sequence: {
      ordered_json arr = ordered_json::array();
      for (const auto& item : node) arr.push_back(yaml_to_json(item, where));
      return arr;
    }
    case YAML::NodeType::Map: {
      ordered_json obj = ordered_json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          throw Error(mark_of(kv.first, where) + ": mapping keys must be strings");
        }
        obj[kv.first.Scalar()] = yaml_to_json(kv.second, where);
      }
      return obj;
    }
  }
  return nullptr;
}

ordered_json parse_yaml_document(std::string_view text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(where + ":" + std::to_string(e.mark.line + 1) + ":" +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return yaml_to_json(root, where);
}

bool yaml_needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  const auto front = static_cast<unsigned char>(s.front());
  const auto back = static_cast<unsigned char>(s.back());
  if (front == ' ' || front == '\t' || back == ' ' || back == '\t') return true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || u >= 0x80) return true;
  }
  // Indicator characters that start something else than a plain scalar.
  static constexpr std::string_view kIndicators = "?:,[]{}#&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return true;
  if (s.front() == '-' && (s.size() == 1 || s[1] == ' ')) return true;
  if (s.find(": ") != std::string_view::npos || s.back() == ':') return true;
  if (s.find(" #") != std::string_view::npos) return true;
  // Words that YAML 1.1 or 1.2 readers take for null, booleans or merge keys.
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::string_view, 16> kWords = {
      "~", "null", "true", "false", "yes",  "no",    "on",    "off",
      "y", "n",    "=",    "<<",    ".inf", "-.inf", "+.inf", ".nan"};
  for (auto w : kWords) {
    if (lower == w) return true;
  }
  // Anything that might read as a number, a date or a time (1, 0o1, 0x1f, 1e3, .5, -1,
  // 2024-01-01, 1:30): quoted whenever it starts like a number.
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (digit(s.front())) return true;
  if ((s.front() == '-' || s.front() == '+' || s.front() == '.') && s.size() > 1 &&
      (digit(s[1]) || (s[1] == '.' && s.size() > 2 && digit(s[2])))) {
    return true;
  }
  return false;
}

namespace {

void write_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\x";
          out += kHex[u >> 4];
          out += kHex[u & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write_string(std::string& out, std::string_view s) {
  if (yaml_needs_quotes(s)) {
    write_quoted(out, s);
  } else {
    out += s;
  }
}

void write_scalar(std::string& out, const ordered_json& v) {
  switch (v.type()) {
    case ordered_json::value_t::null:
      out += "null";
      break;
    case ordered_json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case ordered_json::value_t::number_integer:
      out += std::to_string(v.get<std::int64_t>());
      break;
    case ordered_json::value_t::number_unsigned:
      out += std::to_string(v.get<std::uint64_t>());
      break;
    case ordered_json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) {
        out += ".nan";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-.inf" : ".inf";
      } else {
        out += v.dump();
      }
      break;
    }
    case ordered_json::value_t::string:
      write_string(out, v.get_ref<const std::string&>());
      break;
    case ordered_json::value_t::object:
      out += "{}";
      break;
    case ordered_json::value_t::array:
      out += "[]";
      break;
    default:
      out += v.dump();
      break;
  }
}

bool is_block(const ordered_json& v) {
  return (v.is_object() || v.is_array()) && !v.empty();
}

void write_value(std::string& out, const ordered_json& v, int indent, bool inline_first);

void write_indent(std::string& out, int indent) {
  out.append(static_cast<std::size_t>(indent), ' ');
}

/// A mapping at `indent`; with `inline_first`, the first key continues the current line
/// (after "- ").
void write_map(std::string& out, const ordered_json& obj, int indent, bool inline_first) {
  bool first = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!(first && inline_first)) write_indent(out, indent);
    first = false;
    write_string(out, it.key());
    out += ':';
    const auto& v = it.value();
    if (v.is_object() && !v.empty()) {
      out += '\n';
      write_map(out, v, indent + 2, false);
    } else if (v.is_array() && !v.empty()) {
      out += '\n';
      write_value(out, v, indent, false);
    } else {
      out += ' ';
      write_scalar(out, v);
      out += '\n';
    }
  }
}

void write_seq(std::string& out, const ordered_json& arr, int indent, bool inline_first) {
  bool first = true;
  for (const auto& item : arr) {
    if (!(first && inline_first)) write_indent(out, indent);
    first = false;
    out += "- ";
    if (is_block(item)) {
      write_value(out, item, indent + 2, true);
    } else {
      write_scalar(out, item);
      out += '\n';
    }
  }
}

void write_value(std::string& out, const ordered_json& v, int indent, bool inline_first) {
  if (v.is_object() && !v.empty()) {
    write_map(out, v, indent, inline_first);
  } else if (v.is_array() && !v.empty()) {
    write_seq(out, v, indent, inline_first);
  } else {
    if (!inline_first) write_indent(out, indent);
    write_scalar(out, v);
    out += '\n';
  }
}

}  // namespace

std::string to_yaml_document(const ordered_json& value) {
  std::string out;
  write_value(out, value, 0, false);
  return out;
}

std::string to_yaml(const std::vector<ordered_json>& objects) {
  std::string out;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (i > 0) out += "---\n";
    out += to_yaml_document(objects[i]);
  }
  return out;
}

std::string to_json(const std::vector<ordered_json>& objects) {
  ordered_json list;
  list["apiVersion"] = "v1";
  list["kind"] = "List";
  list["items"] = ordered_json::array();
  for (const auto& o : objects) list["items"].push_back(o);
  list["metadata"] = ordered_json::object();
  return list.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ktrain::render
