#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain status RUN`: the run's state, one row per rank, and why it is pending or failed.
void add_status_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
