// Fuzzes the project file: YAML text (with its aliases' budget) -> tree -> --set
// overrides -> validation -> Project -> rendered Kubernetes objects.
//
// Input: the project file, then optionally "\n----\n" and --set values, one a line.
// Expected: ProjectError or another ktrain::Error (a UsageError from render).

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz_input.h"
#include "project/parse.h"
#include "render/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 2);
  std::vector<std::string> sets;
  std::istringstream lines(parts[1]);
  for (std::string line; std::getline(lines, line) && sets.size() < 8;) {
    if (!line.empty()) sets.push_back(line);
  }
  try {
    const auto project = ktrain::project::parse_project(parts[0], "ktrain.yaml", "/fuzz", sets);
    ktrain::render::RenderOptions options;
    options.run_id = "fz0a1";
    // As `ktrain render` of a sweep does: each object is handed on and dropped.
    size_t objects = 0;
    ktrain::render::render_each(project, options,
                                [&objects](nlohmann::ordered_json&& o) { objects += o.size(); });
  } catch (const ktrain::Error&) {
  }
  return 0;
}
