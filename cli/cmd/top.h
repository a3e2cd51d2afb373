#pragma once
#include "cmd/command.h"

namespace ktrain::cmd {

/// `ktrain top [RUN]`: how busy a run's GPUs are, per rank and per node (DCGM exporter),
/// with CPU and memory (metrics.k8s.io); without RUN, one line per ktrain run.
void add_top_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
