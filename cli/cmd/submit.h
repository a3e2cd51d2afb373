#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain submit`: renders the project and starts its training job on the cluster
/// (or this machine with --local); prints the run name; --wait/--follow wait for it.
void add_submit_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
