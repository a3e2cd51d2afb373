#include "base/names.h"

#include <cctype>

namespace ktrain {

namespace {

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63
bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

}  // namespace

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || s.size() > 63 || !lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  for (char c : s)
    if (!lower_alnum(c) && c != '-') return false;
  return true;
}

bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    auto dot = s.find('.', start);
    if (!is_dns1123_label(s.substr(start, dot == std::string_view::npos ? s.npos : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_domain_path(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos || slash + 1 == s.size()) return false;
  if (!is_dns1123_subdomain(s.substr(0, slash))) return false;
  for (const char c : s.substr(slash + 1)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("-._~!$&'()*+,;=:@%/").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool is_label_key(std::string_view s) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return is_qualified_name_part(s);
  return is_dns1123_subdomain(s.substr(0, slash)) && is_qualified_name_part(s.substr(slash + 1));
}

bool is_label_value(std::string_view s) {
  return s.empty() || is_qualified_name_part(s);
}

bool is_env_var_name(std::string_view s) {
  if (s.empty()) return false;
  auto ok_first = [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  };
  if (!ok_first(s.front())) return false;
  for (char c : s)
    if (!ok_first(c) && !std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string to_dns1123_label(std::string_view s, std::size_t max_length) {
  std::string out;
  for (char c : s) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower_alnum(l)) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > max_length) out.resize(max_length);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace ktrain
