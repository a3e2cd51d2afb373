#pragma once
// Whether a service's workload is ready, as each serve.target defines it: a
// Deployment's rollout as `kubectl rollout status` computes it, an InferenceService's
// Ready condition, a LeaderWorkerSet's Available condition with every group ready.

#include <string>

#include <nlohmann/json.hpp>

namespace ktrain::kube {

/// Where a workload's rollout stands.
struct RolloutState {
  bool done = false;
  bool failed = false;  ///< it will not become ready by itself (progress deadline, model load)
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

}  // namespace ktrain::kube
