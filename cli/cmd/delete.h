#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain delete RUN...`: stops the runs and deletes everything they created.
void add_delete_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
