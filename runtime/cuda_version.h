#pragma once
// Whether this node's NVIDIA driver can run the image's CUDA: the version the
// driver supports (cuDriverGetVersion, reported by ktrain-gpucheck as the fact
// "driver_cuda N"), the version the image was built for, and the comparison.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktrain::launch {

/// A CUDA version, major and minor (the patch level does not matter to the driver).
struct CudaVersion {
  int major = 0;
  int minor = 0;

  /// CUDA's own encoding, as cuDriverGetVersion returns it: major * 1000 + minor * 10.
  int encoded() const { return major * 1000 + minor * 10; }

  /// Returns "12.1".
  std::string text() const;
};

/// Parses "12", "12.1", "12.1.0" or "12.4.1.003": numbers separated by dots, of
/// which only the first two count (a missing minor is 0). nullopt for anything else.
std::optional<CudaVersion> parse_cuda_version(std::string_view text);

/// Parses the helper's "driver_cuda" fact (e.g. "12040"); nullopt unless a positive number.
std::optional<int> parse_driver_cuda(std::string_view text);

/// The CUDA version a driver supports: 12040 -> 12.4.
CudaVersion driver_cuda_version(int driver);

/// Whether a driver reporting `driver` (cuDriverGetVersion) runs code built for
/// `need`. Conservative: minor-version compatibility may let a 12.0 driver run
/// some 12.x code, but not all of it (PTX JIT, newer APIs), so this asks for
/// driver >= need.
bool driver_runs(int driver, CudaVersion need);

/// The version in a CUDA runtime library's file name: libcudart.so.12 -> 12.0,
/// libcudart.so.12.1.105 -> 12.1; nullopt for other names (libcudart.so,
/// libcudart_static.a).
std::optional<CudaVersion> cudart_file_version(std::string_view file_name);

/// The folders to look for libcudart.so.* in, globs expanded, in this order: the
/// entries of LD_LIBRARY_PATH, /usr/local/cuda/lib64, /usr/local/cuda/targets/*/lib,
/// /usr/lib/x86_64-linux-gnu, /usr/lib64, $CONDA_PREFIX/lib, /opt/conda/lib, and
/// nvidia/cuda_runtime/lib under the site-packages and dist-packages folders of
/// nccl_search_patterns(). KTRAIN_CUDA_LIB_ROOTS (folders separated by ':'),
/// when set, replaces the whole list; it is meant for tests.
std::vector<std::string> cudart_search_dirs(const std::map<std::string, std::string>& env);

/// What the image needs, and where that was learnt.
struct CudaNeed {
  std::optional<CudaVersion> version;  ///< nullopt: unknown, nothing to check
  /// "KTRAIN_CUDA_VERSION=12.1", "CUDA_VERSION=12.1.0" or a libcudart path.
  std::string source;
  std::vector<std::string> warnings;  ///< e.g. a malformed CUDA_VERSION, ignored
};

/// Parses the value of `variable` as a CUDA version; throws LaunchError(78)
/// naming the variable and the value when it is not one.
CudaVersion parse_cuda_setting(const std::string& variable, const std::string& value);

/// The CUDA version the image needs: KTRAIN_CUDA_VERSION (malformed: LaunchError(78)),
/// else CUDA_VERSION (malformed: a warning, then ignored), else the newest
/// libcudart.so.* in `lib_dirs`, else unknown.
CudaNeed find_cuda_need(const std::map<std::string, std::string>& env,
                        const std::vector<std::string>& lib_dirs);

/// The newest libcudart.so.* directly in any of `dirs` (nullopt version: none):
/// its version, and its path as the source.
CudaNeed newest_cudart(const std::vector<std::string>& dirs);

/// The termination message for a driver too old for the image: names `node`
/// ("node gpu-node-7" or "host NAME"), both versions, where the need came from and
/// what to do.
std::string driver_too_old_message(const std::string& node, int driver, const CudaNeed& need);

}  // namespace ktrain::launch
