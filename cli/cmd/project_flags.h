#pragma once
// The flags of every verb that reads the project file: -f/--file and --set.

#include <string>
#include <vector>

#include "cmd/command.h"
#include "project/project.h"

namespace ktrain::cmd {

/// -f/--file PATH (default ktrain.yaml, "-" = standard input) and repeatable
/// --set key.path=value overrides.
struct ProjectFlags {
  std::string file = "ktrain.yaml";
  std::vector<std::string> sets;

  /// Adds -f/--file and --set to `app`, bound to this struct (which must outlive `app`).
  void add_to(CLI::App& app);
  /// Reads and validates the project file; throws project::ProjectError (exit status 2).
  project::Project load(Env& env) const;
};

}  // namespace ktrain::cmd
