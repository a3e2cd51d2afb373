#pragma once
#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/pod_target.h"

namespace ktrain::cmd {

/// `ktrain exec RUN [--rank N | --node N] [-it] -- CMD...`: runs a command in the
/// container of one of a run's pods; the command's exit status is ktrain's.
/// Runs `command` in `t`'s container with stdin (0), stdout (1) and stderr (2), and a
/// terminal in raw mode with `tty` (stdin must then be a terminal, else a warning and
/// none); returns the command's exit status.
int exec_in(Env& env, kube::Client& client, const PodTarget& t,
            const std::vector<std::string>& command, bool stdin, bool tty);

void add_exec_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
