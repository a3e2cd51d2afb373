#pragma once
// How busy a run's pods are: GPU figures from NVIDIA's DCGM exporter (one /metrics per
// GPU node), CPU and memory from metrics.k8s.io, joined to the run's pods and ranks.
// Pure functions of the answers, so they are tested without a server; fetching them is
// kube/usage_fetch.h.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/prometheus_text.h"

namespace ktrain::kube {

/// The DCGM exporter's metric names that `ktrain top` reads (framebuffer sizes in MiB).
inline constexpr const char* kDcgmGpuUtil = "DCGM_FI_DEV_GPU_UTIL";
inline constexpr const char* kDcgmFbUsed = "DCGM_FI_DEV_FB_USED";
inline constexpr const char* kDcgmFbFree = "DCGM_FI_DEV_FB_FREE";
inline constexpr const char* kDcgmFbReserved = "DCGM_FI_DEV_FB_RESERVED";

/// One GPU as its node's DCGM exporter reports it.
struct GpuUsage {
  std::string node;        ///< the node whose exporter reported it
  std::string gpu;         ///< label gpu: the device index on the node ("0".."7")
  std::string uuid;        ///< label UUID
  std::string model;       ///< label modelName
  std::string pod;         ///< label pod (pod_name before exporter 2.x): the pod it is allocated to
  std::string namespace_;  ///< label namespace (pod_namespace)
  std::optional<double> util_percent;
  std::optional<double> used_bytes;
  std::optional<double> total_bytes;  ///< used + free (+ reserved when reported)
};

/// The GPUs in one exporter's samples, in the order of their gpu index; `node` is the
/// node the exporter runs on (when "", the samples' Hostname label). NaN and negative
/// figures count as unknown.
std::vector<GpuUsage> gpus_from_dcgm(const std::vector<PromSample>& samples,
                                     const std::string& node);

/// Whether `name` is one of the DCGM metrics above (the parser's filter).
bool is_dcgm_metric(std::string_view name);

/// Figures summed over some GPUs.
struct GpuTotals {
  int count = 0;
  std::optional<double> util_percent;  ///< the mean over the GPUs that report it
  std::optional<double> used_bytes;    ///< summed over the GPUs that report it
  std::optional<double> total_bytes;
};

/// The totals of `gpus`.
GpuTotals totals(const std::vector<GpuUsage>& gpus);

/// One pod of a run (a rank of a training run, a replica of a service).
struct PodUsage {
  std::string run;
  std::string namespace_;
  std::string kind;  ///< "train" or "serve"
  int rank = -1;     ///< the completion index; for a service, the replica by age
  std::string pod;
  std::string node;
  std::string phase;
  int gpus_requested = 0;  ///< the nvidia.com/gpu limit of its containers
  std::vector<GpuUsage> gpus;
  std::optional<double> cpu_cores;
  std::optional<double> memory_bytes;
};

/// One node that runs pods of the run(s).
struct NodeUsage {
  std::string node;
  std::vector<std::string> pods;
  std::vector<GpuUsage> gpus;  ///< every GPU its exporter reports, the run's or not
  bool exporter = false;       ///< its exporter answered
  std::optional<double> cpu_cores;
  std::optional<double> memory_bytes;
};

/// The pods of the run(s) among `pods` (one per rank, the newest; in run, then rank
/// order), with their CPU and memory from `pod_metrics` (metrics.k8s.io PodMetrics
/// items) and the GPUs that `gpus` allocates to them (by the exporter's pod and
/// namespace labels).
std::vector<PodUsage> join_pods(const std::vector<nlohmann::json>& pods,
                                const std::vector<nlohmann::json>& pod_metrics,
                                const std::vector<GpuUsage>& gpus);

/// The nodes of `pods`, in name order, with their figures from `node_metrics`
/// (NodeMetrics objects) and `gpus`; `exporter_nodes` are the nodes whose exporter answered.
std::vector<NodeUsage> join_nodes(const std::vector<PodUsage>& pods,
                                  const std::vector<nlohmann::json>& node_metrics,
                                  const std::vector<GpuUsage>& gpus,
                                  const std::vector<std::string>& exporter_nodes);

/// The CPU (cores) and memory (bytes) of a PodMetrics or NodeMetrics object, summed over
/// its containers; nullopt for what it does not say.
std::pair<std::optional<double>, std::optional<double>> usage_of(const nlohmann::json& metrics);

}  // namespace ktrain::kube
