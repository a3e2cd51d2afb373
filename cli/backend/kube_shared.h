#pragma once
// What the files of the cluster backend (kube_*.cc) share: the kinds a run owns, the
// labels of rendered objects, what summaries leave out, and the first failed rank.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ktrain::backend::detail {

/// The kinds a run may own, in the order they are deleted.
struct OwnedKind {
  const char* api_version;
  const char* kind;
  bool optional;  ///< the API may be missing (a CRD that is not installed)
};
inline constexpr OwnedKind kOwnedKinds[] = {
    {"batch/v1", "Job", false},
    {"v1", "Service", false},
    {"scheduling.volcano.sh/v1beta1", "PodGroup", true},
    {"apps/v1", "Deployment", false},
    {"autoscaling/v2", "HorizontalPodAutoscaler", true},
    {"policy/v1", "PodDisruptionBudget", true},
    // The operators' objects (train.target, serve.target): their CRDs may be missing.
    {"kubeflow.org/v1", "PyTorchJob", true},
    {"kubeflow.org/v1", "TFJob", true},
    {"kubeflow.org/v1", "MPIJob", true},
    {"trainer.kubeflow.org/v1alpha1", "TrainJob", true},
    {"jobset.x-k8s.io/v1alpha2", "JobSet", true},
    {"serving.kserve.io/v1beta1", "InferenceService", true},
    {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", true},
    // A TrainJob's own runtime (a stock image's, with the launcher's init container):
    // owned by the run, never a run itself.
    {"trainer.kubeflow.org/v1alpha1", "TrainingRuntime", true},
};

/// Where the operators' kinds start in kOwnedKinds.
inline constexpr std::size_t kFirstOperatorKind = 6;
static_assert(std::string_view(kOwnedKinds[kFirstOperatorKind].kind) == "PyTorchJob");

/// The value of label `key` of a rendered object, "" when it has none.
std::string label_of(const nlohmann::ordered_json& obj, const char* key);
/// The metadata.name of a rendered object, "" when it has none.
std::string name_of(const nlohmann::ordered_json& obj);

/// Whether objects of `kind` are a service's (ktrain serve), not a run's.
bool is_service_kind(const std::string& kind);

/// What a summary does not need, dropped while each page or event is parsed.
extern const std::vector<std::string> kSummaryDropKeys;

/// Runs `f` (a watch's thread); an error it throws is kept in `error` unless one is
/// there already, and `cv` is woken to say so.
void keep_first_error(std::mutex& mu, std::condition_variable& cv, std::optional<Error>& error,
                      const std::string& what, const std::function<void()>& f);

/// The rank that failed first among a run's pods, and its exit code (-1 when unknown):
/// the earliest finish among failed ranks, a peer's "stopped because another rank
/// failed" (exit 75) only when nothing else failed.
std::optional<std::pair<int, int>> first_failure(const std::vector<nlohmann::json>& pods);

}  // namespace ktrain::backend::detail
