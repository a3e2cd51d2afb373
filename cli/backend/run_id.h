#pragma once
// Run names: "<project name>-<run id>", the id 5 characters of [a-z0-9].

#include <string>

namespace ktrain::backend {

/// A fresh random run id, e.g. "k3x9q".
std::string random_run_id();

/// Whether `id` can be a run id: 1 to 12 characters of [a-z0-9], starting with a letter or digit.
bool is_valid_run_id(const std::string& id);

}  // namespace ktrain::backend
