#pragma once
// `ktrain completion bash|zsh|fish`: a shell completion script generated from the
// command line's own verbs and flags, so that it never goes stale.

#include <string>

#include "cmd/command.h"

namespace ktrain::cmd {

/// Registers `ktrain completion SHELL` on `app`, the top-level app; the script is
/// generated from the verbs and flags registered on `app` when the verb runs.
void add_completion_command(CLI::App& app, Env& env, CommandResult& result);

/// The completion script for `shell` ("bash", "zsh" or "fish") of the verbs
/// (visible subcommands) and flags of `app`; throws UsageError for another shell.
std::string completion_script(const CLI::App& app, const std::string& shell);

}  // namespace ktrain::cmd
