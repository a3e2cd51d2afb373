#pragma once
// Helpers for the parser's tests: parse a text, and its problems as formatted lines.

#include <string>
#include <vector>

#include "project/parse.h"

namespace ktrain::project::testing {

inline Project parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_project(text, "ktrain.yaml", "/work/proj", sets);
}

/// The formatted problems of `text`; empty when it is valid.
inline std::vector<std::string> problems(const std::string& text,
                                         const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const ProjectError& e) {
    std::vector<std::string> out;
    for (const auto& p : e.problems()) out.push_back(p.format());
    return out;
  }
  return {};
}

/// The single problem of `text`, or a note when there are none or several.
inline std::string problem(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto all = problems(text, sets);
  if (all.size() == 1) return all[0];
  std::string out = std::to_string(all.size()) + " problems:";
  for (const auto& p : all) out += "\n" + p;
  return out;
}

}  // namespace ktrain::project::testing
