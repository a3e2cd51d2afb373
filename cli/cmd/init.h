#pragma once
#include <string>

#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain init`: writes a commented ktrain.yaml from flags.
struct InitOptions {
  std::string file = "ktrain.yaml";  ///< "-" writes to stdout
  std::string name;                  ///< default: from the project folder's name
  std::string image;                 ///< default: a stock image for the framework
  std::string framework = "pytorch";
  int gpus = 1;
  int nodes = 1;
  bool force = false;

  /// Fills defaults (name from the folder, image from the framework).
  void complete();
  /// Checks the flags; throws UsageError (exit status 2).
  void validate() const;
  /// Writes the file; returns the exit status.
  int run(Env& env) const;
};

/// The commented project file for `o` (which must be complete and valid).
std::string init_project_text(const InitOptions& o);

/// Registers `init` on `app`.
void add_init_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
