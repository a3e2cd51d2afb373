#include "base/image_ref.h"

#include <cctype>

#include "base/error.h"

namespace ktrain {

namespace {

constexpr std::string_view kExample =
    "expected an image reference like registry.example.com/team/app:v1";

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}
bool is_word(char c) {
  return is_alnum(c) || c == '_';
}
bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// path-component := [a-z0-9]+ (separator [a-z0-9]+)*; separator := [_.] | __ | -+
bool is_path_component(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  std::size_t i = 0;
  while (i < s.size()) {
    if (is_lower_alnum(s[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < s.size() && !is_lower_alnum(s[j])) ++j;
    std::string_view sep = s.substr(i, j - i);
    bool ok = sep == "." || sep == "_" || sep == "__" ||
              sep.find_first_not_of('-') == std::string_view::npos;
    if (!ok) return false;
    i = j;
  }
  return true;
}

// domain := component (. component)* [: port]; component := [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?
bool is_domain(std::string_view s) {
  std::string_view host = s;
  if (auto colon = s.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    host = s.substr(0, colon);
  }
  if (host.empty()) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = host.find('.', start);
    std::string_view part =
        host.substr(start, dot == std::string_view::npos ? host.npos : dot - start);
    if (part.empty() || !is_alnum(part.front()) || !is_alnum(part.back())) return false;
    for (char c : part)
      if (!is_alnum(c) && c != '-') return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool is_tag(std::string_view s) {
  if (s.empty() || s.size() > 128 || !is_word(s.front())) return false;
  for (char c : s)
    if (!is_word(c) && c != '.' && c != '-') return false;
  return true;
}

// digest := algorithm ":" hex; algorithm := [A-Za-z][A-Za-z0-9]* ([+._-] [A-Za-z][A-Za-z0-9]*)*
bool is_digest(std::string_view s) {
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view algo = s.substr(0, colon), hex = s.substr(colon + 1);
  if (algo.empty() || !std::isalpha(static_cast<unsigned char>(algo.front()))) return false;
  bool after_sep = false;
  for (char c : algo) {
    if (c == '+' || c == '.' || c == '_' || c == '-') {
      if (after_sep) return false;
      after_sep = true;
    } else if (is_alnum(c)) {
      if (after_sep && !std::isalpha(static_cast<unsigned char>(c))) return false;
      after_sep = false;
    } else {
      return false;
    }
  }
  if (after_sep || hex.size() < 32) return false;
  for (char c : hex)
    if (!is_hex(c)) return false;
  if (algo == "sha256" && hex.size() != 64) return false;
  if (algo == "sha512" && hex.size() != 128) return false;
  return true;
}

std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

// Returns the problem ("" if none) and fills `out`.
std::string parse(std::string_view ref, ImageRef& out) {
  const std::string found = ", found " + quoted(ref);
  if (ref.empty()) return std::string(kExample) + ", found nothing";
  for (char c : ref) {
    if (std::isspace(static_cast<unsigned char>(c)) || !std::isprint(static_cast<unsigned char>(c)))
      return std::string(kExample) + " (no spaces)" + found;
  }
  std::string_view rest = ref;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    if (!is_digest(digest))
      return "the digest after '@' must look like sha256:<64 hex digits>" + found;
    out.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  // A ':' after the last '/' starts the tag (a ':' before it is a registry port).
  auto slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (!is_tag(tag))
      return "the tag after ':' must be 1 to 128 letters, digits, '_', '.' or '-' (not starting "
             "with '.' or '-'), like v1 or 24.08-py3" +
             found;
    out.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return std::string(kExample) + found;
  std::string_view path = rest;
  auto first_slash = rest.find('/');
  if (first_slash != std::string_view::npos) {
    std::string_view first = rest.substr(0, first_slash);
    if (first == "localhost" || first.find_first_of(".:") != std::string_view::npos) {
      if (!is_domain(first))
        return "invalid registry name " + quoted(first) + "; " + std::string(kExample) + found;
      out.registry = std::string(first);
      path = rest.substr(first_slash + 1);
    }
  }
  if (out.registry.empty() || out.registry == "index.docker.io" ||
      out.registry == "registry-1.docker.io")
    out.registry = "docker.io";
  if (path.empty()) return std::string(kExample) + found;
  std::size_t start = 0;
  while (true) {
    auto next = path.find('/', start);
    std::string_view comp =
        path.substr(start, next == std::string_view::npos ? path.npos : next - start);
    if (!is_path_component(comp)) {
      bool upper = comp.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string_view::npos;
      return std::string(
                 "repository names are lowercase letters, digits and separators (. _ __ -)") +
             (upper ? " (no uppercase)" : "") + "; " + std::string(kExample) + found;
    }
    if (next == std::string_view::npos) break;
    start = next + 1;
  }
  if (rest.size() > 255) return "the name is longer than 255 characters" + found;
  out.repository = std::string(path);
  if (out.registry == "docker.io" && out.repository.find('/') == std::string::npos)
    out.repository = "library/" + out.repository;
  return "";
}

}  // namespace

std::string ImageRef::name() const {
  return registry + "/" + repository;
}

std::string ImageRef::str() const {
  std::string s = name();
  if (!tag.empty()) s += ":" + tag;
  if (!digest.empty()) s += "@" + digest;
  return s;
}

ImageRef parse_image_ref(std::string_view ref) {
  ImageRef r;
  if (std::string problem = parse(ref, r); !problem.empty()) throw UsageError(problem);
  return r;
}

std::string image_ref_problem(std::string_view ref) {
  ImageRef r;
  return parse(ref, r);
}

}  // namespace ktrain
