#pragma once
// Image pulls that can never succeed (a manifest that does not exist, a registry that
// refuses the credentials, a reference that does not parse), told from the ones that
// may (a registry that is slow or down), so that a wait ends instead of waiting forever.

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace ktrain::kube {

/// Whether a container waiting with `reason` (ErrImagePull, ImagePullBackOff,
/// InvalidImageName, ErrImageNeverPull) and the kubelet's `message` cannot start by
/// retrying the pull: the registry said not found, unauthorized or denied, or the
/// reference is invalid. ImagePullBackOff's own message ("Back-off pulling image") says
/// nothing either way: false.
bool pull_failure_is_permanent(const std::string& reason, const std::string& message);

/// Whether `reason` is one of a container that cannot get its image.
bool is_pull_failure_reason(const std::string& reason);

/// How long a pull that cannot succeed is watched before a wait gives up on it: long
/// enough for the kubelet to try again once (a tag pushed just after the submit), short
/// enough that CI learns of a typo in under a minute.
inline constexpr std::chrono::seconds kPullGiveUp{30};

/// Follows the ranks of a run through their waiting states and says when one has been
/// failing to pull for good for kPullGiveUp. The back-off between pulls (ImagePullBackOff)
/// keeps the failure going; any other state of the rank ends it.
class PullFailureWatch {
 public:
  /// What rank `node` waits with now (reason "" = nothing: running, ended, gone).
  void observe(int node, const std::string& reason, const std::string& message,
               std::chrono::steady_clock::time_point now);
  /// The failure to report once one has lasted kPullGiveUp ("node 1: ErrImagePull: ...").
  std::optional<std::string> given_up(std::chrono::steady_clock::time_point now) const;

 private:
  struct Failing {
    std::chrono::steady_clock::time_point since;
    std::string what;  ///< the reason and the registry's words, as first seen
  };
  std::map<int, Failing> failing_;
};

}  // namespace ktrain::kube
