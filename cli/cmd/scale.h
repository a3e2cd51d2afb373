#pragma once
// `ktrain scale NAME`: --replicas N through the scale subresource of the Deployment
// (or LeaderWorkerSet), and --min/--max on the HorizontalPodAutoscaler that controls
// it; a KServe InferenceService in its own minReplicas/maxReplicas.

#include <optional>
#include <string>

#include "backend/backend.h"
#include "cmd/command.h"
#include "kube/client.h"

namespace ktrain::cmd {

using ScaleRequest = backend::ScaleRequest;

/// Throws UsageError unless at least one of --replicas/--min/--max is given and each is
/// in range (replicas >= 0, min >= 1, max >= 1, min <= max).
void validate_scale(const ScaleRequest& req);

/// Scales through `backend` (backend::Backend::scale), printing what changed and its
/// warnings.
int run_scale(Env& env, backend::Backend& backend, const ScaleRequest& req);
/// run_scale on the cluster of `client`: the Deployment, InferenceService or
/// LeaderWorkerSet named req.name; prints "deployment.apps/NAME scaled",
/// "horizontalpodautoscaler.autoscaling/NAME patched (min A, max B)" or
/// "inferenceservice.serving.kserve.io/NAME scaled (min A, max B)".
int run_scale(Env& env, kube::Client& client, const ScaleRequest& req);

/// Registers `ktrain scale`.
void add_scale_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
