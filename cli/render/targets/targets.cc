#include "render/targets/targets.h"

#include "base/error.h"

namespace ktrain::render::targets {

// Defined one a file, beside this one.
extern const TrainTarget kJob, kJobSet, kPyTorchJob, kTFJob, kMPIJob, kTrainJob;
extern const ServeTarget kDeployment, kKServe, kLeaderWorkerSet;

const std::vector<const TrainTarget*>& train_targets() {
  static const std::vector<const TrainTarget*> all = {&kJob,    &kPyTorchJob, &kTFJob,
                                                      &kMPIJob, &kTrainJob,   &kJobSet};
  return all;
}

const std::vector<const ServeTarget*>& serve_targets() {
  static const std::vector<const ServeTarget*> all = {&kDeployment, &kKServe, &kLeaderWorkerSet};
  return all;
}

const TrainTarget& train_target(const std::string& name) {
  for (const auto* t : train_targets())
    if (name == t->name) return *t;
  throw Error("no training target '" + name + "'");
}

const ServeTarget& serve_target(const std::string& name) {
  for (const auto* t : serve_targets())
    if (name == t->name) return *t;
  throw Error("no serving target '" + name + "'");
}

}  // namespace ktrain::render::targets
