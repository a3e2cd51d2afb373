#pragma once
// The launcher's side of the GPU checks. Driver and NCCL calls run in a child
// process, the dynamically linked helper `ktrain-gpucheck` (runtime/gpucheck/),
// so that a crashing driver cannot take PID 1 down and the launcher itself can
// stay static. The helper prints one fact per line: "info TEXT", "count N",
// "driver_cuda N" (cuDriverGetVersion, e.g. 12040), "nccl_id HEX", "error TEXT";
// it exits 0 when the check passed, 77 otherwise.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/config.h"
#include "runtime/peer_link.h"

namespace ktrain::launch {

/// What a helper run reported.
struct HelperResult {
  int status = 0;                            ///< the helper's exit status (128+sig if killed)
  std::vector<std::string> info;             ///< "info" lines, for the log
  std::string error;                         ///< the first "error" line's text
  std::map<std::string, std::string> facts;  ///< other "key value" lines
  std::string stopped_by_peer;               ///< set when a peer failure cut the run short
  /// The helper could not run in this image at all (exec or dynamic loader
  /// failure: exit 126/127 without a word on stdout), e.g. a C library older than
  /// the one it was built against.
  bool unavailable = false;
};

/// Parses the helper's stdout into `out`.
void parse_helper_output(std::string_view text, HelperResult& out);

/// Returns the helper to use: KTRAIN_GPUCHECK, else ktrain-gpucheck next to the
/// launcher's own executable; "" when there is none.
std::string find_gpucheck(const Config& config);

/// Whether the node has an NVIDIA device node (/dev/nvidiactl or /dev/nvidia0).
bool nvidia_device_present();

/// Called with each "key value" fact as soon as the helper prints it (the helper
/// keeps running meanwhile); an exception thrown here kills the helper and passes on.
using FactCallback = std::function<void(const std::string& key, const std::string& value)>;

/// Runs the helper with `args`, killing it after `timeout_s`. While it runs, the
/// peers that `peers()` returns (may be null) are watched: a peer failure kills it
/// and sets stopped_by_peer.
HelperResult run_gpucheck(const std::string& path, const std::vector<std::string>& args,
                          double timeout_s, const std::function<PeerLink*()>& peers = {},
                          const FactCallback& on_fact = {});

/// All-reduce bus bandwidth from algorithm bandwidth, as nccl-tests computes it:
/// busbw = algbw * 2 (n - 1) / n.
double allreduce_busbw(double algbw, int nranks);

/// The places to look for libnccl.so.2 after the default search: $CONDA_PREFIX/lib,
/// and nvidia/nccl/lib under the site-packages and dist-packages folders that pip
/// installs NVIDIA's wheels into (`env` gives CONDA_PREFIX, VIRTUAL_ENV, HOME).
std::vector<std::string> nccl_search_patterns(const std::map<std::string, std::string>& env);

}  // namespace ktrain::launch
