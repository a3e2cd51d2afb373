#pragma once
#include <string>

#include "cmd/command.h"
#include "cmd/project_flags.h"

namespace ktrain::cmd {

/// `ktrain validate`: checks the project file and reports every problem
/// (file:line:column: key.path: message) on stderr; exit status 2 when invalid.
/// -o json prints {"valid": ..., "problems": [...]} on stdout, also when invalid.
struct ValidateOptions {
  ProjectFlags project;

  /// Runs the check; returns the exit status.
  int run(Env& env) const;
};

/// Registers `validate` on `app`.
void add_validate_command(CLI::App& app, Env& env, CommandResult& result);

/// The one-line summary of a valid project: "4 nodes x 8 GPUs, pytorch, sweep of 4 runs; serve on
/// port 8080".
std::string project_summary(const project::Project& p);

}  // namespace ktrain::cmd
