#pragma once
// Fetching what `ktrain top` shows: a run's pods, their CPU and memory from
// metrics.k8s.io (metrics-server), and GPU figures from each node's DCGM exporter
// through the API server's proxy. A source that is not installed is said in words,
// not thrown, so that the other is still shown.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/gpu_usage.h"

namespace ktrain::kube {

/// Where the DCGM exporter's Service is: the GPU operator's by default.
struct DcgmLocation {
  std::string namespace_ = "gpu-operator";
  std::string service = "nvidia-dcgm-exporter";
  std::string port = "9400";  ///< a number or the port's name
  std::string scheme;         ///< "" (http) or "https"
  /// "NAMESPACE/SERVICE:PORT", as --dcgm takes it.
  std::string to_string() const;
};

/// The environment variable that sets the DCGM exporter's location (as --dcgm).
inline constexpr const char* kDcgmVar = "KTRAIN_DCGM";

/// Parses "NAMESPACE/[https:]SERVICE[:PORT]" (the port defaults to 9400); nullopt with
/// `problem` set when it is not that.
std::optional<DcgmLocation> parse_dcgm_location(std::string_view s, std::string* problem);

/// The most bytes of one exporter's answer that are read (an 8-GPU node's is ~100 KiB).
inline constexpr std::size_t kMaxMetricsBytes = std::size_t{16} << 20;

/// What `ktrain top` asks for.
struct UsageQuery {
  std::string namespace_;  ///< "" = every namespace (with run empty)
  std::string run;         ///< "" = every ktrain run
  DcgmLocation dcgm;
};

/// Everything `ktrain top` shows.
struct UsageReport {
  std::vector<PodUsage> pods;
  std::vector<NodeUsage> nodes;
  bool gpu_source = false;         ///< at least one DCGM exporter answered
  bool metrics_source = false;     ///< metrics.k8s.io answered
  std::string gpu_missing;         ///< why there are no GPU figures ("" when there are)
  std::string metrics_missing;     ///< why there are no CPU and memory figures
  std::vector<std::string> notes;  ///< lesser problems (a node without an exporter...)
};

/// Reads the pods of `q.run` (its Job's or Deployment's pods, by ktrain.dev/run; every
/// ktrain pod when `q.run` is empty) and the figures of both sources. Throws Error (exit
/// 1) when the run does not exist, and the client's errors for the API server itself.
UsageReport fetch_usage(Client& client, const UsageQuery& q);

}  // namespace ktrain::kube
