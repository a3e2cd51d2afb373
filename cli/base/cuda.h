#pragma once
// CUDA versions: what an image needs (from the project, the image's label, or the
// variables NVIDIA's images set), and what a node's driver runs (from the labels that
// NVIDIA's GPU feature discovery puts on nodes). A driver runs code built for its own
// CUDA version and every older one: a 13.0 driver runs 12.1 code, an 11.2 one does not.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktrain {

struct CudaVersion {
  int major = 0;
  int minor = 0;

  /// "12.1".
  std::string str() const;
  /// As cuDriverGetVersion encodes it: 1000 * major + 10 * minor.
  int encoded() const { return major * 1000 + minor * 10; }
  /// Whether a driver for CUDA `*this` runs code built for `need`.
  bool runs(const CudaVersion& need) const {
    return major > need.major || (major == need.major && minor >= need.minor);
  }
  friend bool operator==(const CudaVersion&, const CudaVersion&) = default;
};

/// "12", "12.1" or "12.1.105" (more parts are ignored; the major is 1 to 999, the minor
/// 0 to 999); nullopt for anything else.
std::optional<CudaVersion> parse_cuda_version(std::string_view s);

/// The label `ktrain build` records in the images it makes.
inline constexpr const char* kImageCudaLabel = "dev.ktrain.cuda";

/// What an image's config says it needs, and where that was read.
struct ImageCuda {
  CudaVersion version;
  std::string source;  ///< "label dev.ktrain.cuda", "CUDA_VERSION=12.1.0", ...
};

/// The CUDA version an image config (the OCI config's "config" object: Env, Labels)
/// needs: the label kImageCudaLabel, else CUDA_VERSION (NVIDIA's CUDA images, NGC,
/// Paddle's), else the cuda>=X.Y of NVIDIA_REQUIRE_CUDA; nullopt when none says.
std::optional<ImageCuda> image_cuda(const nlohmann::json& config);

/// The node labels of NVIDIA's GPU feature discovery that hold the newest CUDA version
/// the node's driver runs: current names, then those of GFD before v0.15.
inline constexpr const char* kGfdCudaMajor = "nvidia.com/cuda.runtime-version.major";
inline constexpr const char* kGfdCudaMinor = "nvidia.com/cuda.runtime-version.minor";
inline constexpr const char* kGfdOldCudaMajor = "nvidia.com/cuda.runtime.major";
inline constexpr const char* kGfdOldCudaMinor = "nvidia.com/cuda.runtime.minor";

/// The CUDA version a node's driver runs, from its labels (a JSON object); nullopt
/// when GPU feature discovery did not label it.
std::optional<CudaVersion> node_cuda(const nlohmann::json& labels);

/// A required node affinity's nodeSelectorTerms (any one may match) that keep a pod on
/// nodes whose driver runs `need`, by GFD's labels, and on nodes that GFD did not label
/// at all (there ktrain-launch checks the driver before the workers start).
nlohmann::ordered_json cuda_node_terms(const CudaVersion& need);

}  // namespace ktrain
