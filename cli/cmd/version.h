#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain version`: the client's version (and the server's with --server, once
/// the cluster client exists).
void add_version_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
