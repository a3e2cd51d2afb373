#include "oci/ignore.h"

#include <fnmatch.h>

#include <sstream>

namespace ktrain::oci {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '/') {
      if (!cur.empty() && cur != ".") out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty() && cur != ".") out.push_back(cur);
  return out;
}

bool match_segments(const std::vector<std::string>& p, size_t i, const std::vector<std::string>& s,
                    size_t j) {
  while (i < p.size()) {
    if (p[i] == "**") {
      // Collapse runs of ** and try every split point.
      while (i < p.size() && p[i] == "**") ++i;
      if (i == p.size()) return true;
      for (size_t k = j; k <= s.size(); ++k) {
        if (match_segments(p, i, s, k)) return true;
      }
      return false;
    }
    if (j >= s.size()) return false;
    if (::fnmatch(p[i].c_str(), s[j].c_str(), 0) != 0) return false;
    ++i;
    ++j;
  }
  return j == s.size();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  return match_segments(split(pattern), 0, split(path), 0);
}

void IgnoreRules::add(const std::string& raw) {
  std::string line = trim(raw);
  if (line.empty() || line[0] == '#') return;
  Rule r;
  if (line[0] == '!') {
    r.negate = true;
    line = trim(line.substr(1));
    has_exceptions_ = true;
  }
  r.segments = split(line);
  if (r.segments.empty()) return;
  // ".." cannot leave the context; drop such segments as Docker's path cleaning does.
  std::vector<std::string> clean;
  for (auto& seg : r.segments) {
    if (seg == "..") {
      if (!clean.empty()) clean.pop_back();
    } else {
      clean.push_back(seg);
    }
  }
  r.segments = clean;
  if (r.segments.empty()) return;
  r.text = (r.negate ? "!" : "") + line;
  rules_.push_back(std::move(r));
}

void IgnoreRules::add_file_text(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) add(line);
}

bool IgnoreRules::ignored(const std::string& path) const {
  const std::vector<std::string> segs = split(path);
  bool result = false;
  for (const Rule& r : rules_) {
    // The pattern matches the path or one of its parent directories.
    bool matched = false;
    for (size_t n = segs.size(); n >= 1 && !matched; --n) {
      std::vector<std::string> prefix(segs.begin(), segs.begin() + static_cast<long>(n));
      matched = match_segments(r.segments, 0, prefix, 0);
    }
    if (matched) result = !r.negate;
  }
  return result;
}

std::vector<std::string> IgnoreRules::patterns() const {
  std::vector<std::string> out;
  for (const auto& r : rules_) out.push_back(r.text);
  return out;
}

}  // namespace ktrain::oci
