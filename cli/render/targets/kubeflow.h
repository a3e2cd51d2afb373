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

/// An operator's object and the labels of its run.
struct KubeflowJob {
  nlohmann::ordered_json object;
  nlohmann::ordered_json labels;
};

/// The object of skeleton `file` (pytorchjob.yaml, ...) for run `run`: named, labelled
/// and annotated as every run's workload, with its runPolicy: retries (backoffLimit),
/// deadline, TTL, suspend for a waiting run, and with scheduling.gang volcano the
/// schedulingPolicy from which the operator makes a PodGroup.
KubeflowJob kubeflow_job(const detail::RenderContext& ctx, const char* file, const std::string& run,
                         const std::string& sweep, const project::SweepPoint& point);

/// A replica spec: count, restartPolicy Never (retries are runPolicy's), pod template.
nlohmann::ordered_json kubeflow_replica(int replicas, nlohmann::ordered_json pod_template);

}  // namespace ktrain::render::targets
