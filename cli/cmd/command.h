#pragma once
// How verbs plug into the command line. Each verb lives in cli/cmd/<verb>.{h,cc}
// with an Options struct (flags and resolved state) and complete/validate/run
// steps, and registers itself with an add_<verb>_command function listed in
// cli/cmd/cli.cc.

#include <CLI/CLI.hpp>

#include "base/env.h"

namespace ktrain::cmd {

/// Where a verb's callback leaves its exit status.
struct CommandResult {
  int status = 0;
};

/// Parses `argv` and runs the selected verb in `env`; returns the exit status.
/// Errors are printed on env.err as "ktrain: error: ..." and mapped to exit statuses.
int run_cli(int argc, const char* const* argv, Env& env);

}  // namespace ktrain::cmd
