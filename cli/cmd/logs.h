#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain logs RUN`: every rank's log, each line prefixed with its rank.
void add_logs_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
