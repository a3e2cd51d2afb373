#pragma once
// Rendering targets: what a run (train.target) or the service (serve.target) becomes.
// One file a target, each defining one Target value; targets.cc lists them. The plain
// Indexed Job and Deployment are the defaults and need no operator; the others need
// the operator's CustomResourceDefinition, named here so that `ktrain submit` can check
// for it before sending anything.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/sweep.h"
#include "render/workloads.h"

namespace ktrain::render::targets {

/// The API resource a target renders its main object to.
struct Api {
  const char* api_version;  ///< "kubeflow.org/v1"
  const char* kind;         ///< "PyTorchJob"
  const char* plural;       ///< "pytorchjobs"
  const char* crd;          ///< "pytorchjobs.kubeflow.org"; "" = built in
  const char* install;      ///< how to install the operator, for the message when it is missing
};

/// A training target.
struct TrainTarget {
  const char* name;  ///< the value of train.target
  Api api;
  /// The container whose exit code and logs are the run's.
  const char* container;
  /// Its pods run ktrain-launch's rendezvous, which needs the run's Secret.
  bool rendezvous;
  /// A pod's host name is <run><host_infix><index> ("-", "-node-0-", "-worker-"): with
  /// the largest index, at most 63 characters.
  const char* host_infix;
  /// The objects of one run (sweep point `point`; index -1 when not a sweep), in apply order.
  std::vector<nlohmann::ordered_json> (*render)(const detail::RenderContext& ctx,
                                                const std::string& run, const std::string& sweep,
                                                const project::SweepPoint& point);
};

/// A serving target.
struct ServeTarget {
  const char* name;  ///< the value of serve.target
  Api api;
  const char* container;  ///< the serving container
  std::vector<nlohmann::ordered_json> (*render)(const detail::RenderContext& ctx);
};

/// The target named `name` (a value that the project's parser accepted).
const TrainTarget& train_target(const std::string& name);
const ServeTarget& serve_target(const std::string& name);

/// Every target, in the order of the project file's enumerations.
const std::vector<const TrainTarget*>& train_targets();
const std::vector<const ServeTarget*>& serve_targets();

}  // namespace ktrain::render::targets
