#pragma once
// The launcher's version string.

namespace ktrain::launch {

/// Returns the version, e.g. "0.1.0".
const char* version();

}  // namespace ktrain::launch
