#pragma once
// `ktrain scale NAME`: --replicas N through the scale subresource of the Deployment
// (or LeaderWorkerSet), and --min/--max on the HorizontalPodAutoscaler that controls
// it; a KServe InferenceService in its own minReplicas/maxReplicas.

#include <optional>
#include <string>

#include "cmd/command.h"
#include "kube/client.h"

namespace ktrain::cmd {

/// What `ktrain scale` was asked to do.
struct ScaleRequest {
  std::string name;  ///< the serve name (its Deployment, InferenceService, LeaderWorkerSet)
  std::optional<int> replicas;
  std::optional<int> min;
  std::optional<int> max;
};

/// Throws UsageError unless at least one of --replicas/--min/--max is given and each is
/// in range (replicas >= 0, min >= 1, max >= 1, min <= max).
void validate_scale(const ScaleRequest& req);

/// Scales through `client` in its namespace the Deployment, InferenceService or
/// LeaderWorkerSet named req.name (Error when there is none): PATCHes its scale
/// subresource for --replicas (warning when an HPA controls it and no --min/--max was
/// given), and merge-patches the HPA for --min/--max (Error when no HPA controls it);
/// an InferenceService's predictor minReplicas/maxReplicas (--replicas N: both N).
/// Prints "deployment.apps/NAME scaled" / "horizontalpodautoscaler.autoscaling/NAME
/// patched (min A, max B)" / "inferenceservice.serving.kserve.io/NAME scaled (min A, max B)".
int run_scale(Env& env, kube::Client& client, const ScaleRequest& req);

/// Registers `ktrain scale`.
void add_scale_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
