#pragma once
// `ktrain serve`: through the Backend, apply the project's `serve` objects (Deployment,
// Service, HPA; or serve.target's InferenceService or LeaderWorkerSet) and wait for the
// rollout as `kubectl rollout status` does, or for the target's own readiness; with
// --local, run serve.command on this machine and wait until it answers.

#include <chrono>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "cmd/command.h"
#include "kube/client.h"
#include "project/project.h"

namespace ktrain::cmd {

/// Options of `ktrain serve` once parsed.
struct ServeRun {
  bool wait = true;
  std::chrono::seconds timeout{600};
  bool dry_run_server = false;
};

/// Serves `project` through `backend` and, unless !opts.wait, waits until it is ready,
/// printing what it waits for on env.err. Returns 0 when ready, 124 on timeout; throws
/// Error when it cannot become ready (a progress deadline, a model that fails to load).
int run_serve(Env& env, backend::Backend& backend, const project::Project& project,
              const ServeRun& opts);
/// run_serve on the cluster of `client`.
int run_serve(Env& env, kube::Client& client, const project::Project& project,
              const ServeRun& opts);

/// Registers `ktrain serve`.
void add_serve_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
