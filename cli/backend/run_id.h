#pragma once
// Run names: "<project name>-<run id>", the id 5 characters of [a-z0-9].

#include <string>

namespace ktrain::backend {

/// A fresh random run id, e.g. "k3x9q".
std::string random_run_id();

/// Whether `id` can be a run id: 1 to 12 characters of [a-z0-9], starting with a letter or digit.
bool is_valid_run_id(const std::string& id);

/// The order of a sweep's runs: NAME-2 before NAME-10 (shorter first, then by text).
inline bool before_in_sweep(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

}  // namespace ktrain::backend
