#pragma once
// `ktrain-launch --install DIR`: the launcher copies itself (and the GPU helper
// beside it, when there) into DIR. The init container that ktrain injects into
// pods of stock images runs this from the launcher image, which has no shell and
// no cp (FROM scratch), into an emptyDir that the training container mounts.

#include <string>

namespace ktrain::launch {

/// Copies the running executable (/proc/self/exe) to DIR/ktrain-launch and, when
/// ktrain-gpucheck is next to it, that to DIR/ktrain-gpucheck; mode 0755. Each file
/// is written to a temporary name, flushed and renamed, so a reader never sees half
/// a file. Returns a one-line summary; throws LaunchError(78) naming the path.
std::string install_launcher(const std::string& dir);

}  // namespace ktrain::launch
