#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain stop RUN...`: stops runs and keeps them (the Job, its status, the logs that
/// remain); `ktrain resume RUN...` starts them again.
void add_stop_command(CLI::App& app, Env& env, CommandResult& result);
void add_resume_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
