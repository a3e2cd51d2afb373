#pragma once
// `ktrain serve`: apply the project's `serve` objects (Deployment, Service, HPA; or
// serve.target's InferenceService or LeaderWorkerSet) and wait for the rollout as
// `kubectl rollout status` does, or for the target's own readiness.

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "kube/client.h"
#include "project/project.h"

namespace ktrain::cmd {

/// Where a Deployment's rollout stands.
struct RolloutState {
  bool done = false;
  bool failed = false;  ///< the progress deadline passed
  std::string message;  ///< kubectl's words: "Waiting for deployment "x" rollout to finish: ..."
};

/// The rollout state of `deployment` as kubectl computes it: the spec update observed
/// (observedGeneration), all replicas updated, no old replicas left, all updated
/// replicas available; failed when the Progressing condition says ProgressDeadlineExceeded.
RolloutState rollout_state(const nlohmann::json& deployment);

/// Where an InferenceService (its Ready condition, and the predictor's when not ready)
/// or a LeaderWorkerSet (its Available condition, all groups ready) stands; for other
/// kinds rollout_state. Failed when KServe reports the predictor's pods failing.
RolloutState target_ready_state(const nlohmann::json& object);

/// Options of `ktrain serve` once parsed.
struct ServeRun {
  bool wait = true;
  std::chrono::seconds timeout{600};
  bool dry_run_server = false;
};

/// Applies the serve objects of `project` through `client` and, unless !opts.wait, waits
/// for the rollout, printing progress on env.err. Returns 0 when rolled out, 1 when the
/// progress deadline passed, 124 on timeout.
int run_serve(Env& env, kube::Client& client, const project::Project& project,
              const ServeRun& opts);

/// Registers `ktrain serve`.
void add_serve_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
