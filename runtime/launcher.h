#pragma once
// The launcher from configuration to exit status: GPU checks, rendezvous, the
// full NCCL preflight, then the workers under supervision.

#include <map>
#include <string>

#include "runtime/config.h"

namespace ktrain::launch {

/// Runs the launcher for a parsed configuration; returns its exit status and
/// writes the one-line cause of a failure to the termination log.
int run_launcher(const Config& config, const std::map<std::string, std::string>& env);

}  // namespace ktrain::launch
