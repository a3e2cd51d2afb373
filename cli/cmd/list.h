#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain list`: the runs in the namespace (or -A), newest first.
void add_list_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
