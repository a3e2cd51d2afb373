#pragma once
// What the Kubeflow Training Operator's jobs (PyTorchJob, TFJob, MPIJob) share.

#include <string>

#include <nlohmann/json.hpp>

#include "project/sweep.h"
#include "render/workloads.h"

namespace ktrain::render::targets {

/// The pod label the operator sets to the replica's index (0-based per replica type).
inline constexpr const char* kKubeflowReplicaIndex =
    "metadata.labels['training.kubeflow.org/replica-index']";

/// runPolicy: retries (backoffLimit), deadline, TTL, suspend for a waiting run, and with
/// scheduling.gang volcano the schedulingPolicy from which the operator makes a PodGroup.
nlohmann::ordered_json kubeflow_run_policy(const detail::RenderContext& ctx, bool queued);

/// Names the object `run` and sets its labels (Kueue's queue unless queued) and
/// annotations (a sweep's parameters, a waiting run's queue).
void kubeflow_metadata(const detail::RenderContext& ctx, nlohmann::ordered_json& obj,
                       const std::string& run, const nlohmann::ordered_json& labels,
                       const project::SweepPoint& point, bool queued);

/// A replica spec: count, restartPolicy Never (retries are runPolicy's), pod template.
nlohmann::ordered_json kubeflow_replica(int replicas, nlohmann::ordered_json pod_template);

}  // namespace ktrain::render::targets
