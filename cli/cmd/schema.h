#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain schema`: prints the JSON Schema of ktrain.yaml (for editors) on stdout.
void add_schema_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
