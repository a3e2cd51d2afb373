#pragma once
// What each rendering target can and cannot express (train.target, serve.target).
// The renderers (render/targets/) assume a project that passed these checks; `ktrain
// validate` and every verb that reads the project report them with file:line:column.

#include <string>
#include <vector>

#include "project/project.h"

namespace ktrain::project {

/// A field that the chosen target cannot express.
struct TargetLimit {
  std::string path;         ///< the field that asks for it ("train.ttl")
  std::string target_path;  ///< "train.target" or "serve.target": where to point if `path` is unset
  std::string message;      ///< names the target, says why and what to do
};

/// Every field of `p` that its targets cannot express; empty when all is well.
std::vector<TargetLimit> target_limits(const Project& p);

/// The ClusterTrainingRuntime a TrainJob of `t` runs on: train.runtime, else the
/// framework's (torch-distributed for pytorch), else "".
std::string trainjob_runtime(const Train& t);

}  // namespace ktrain::project
