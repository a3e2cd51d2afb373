#pragma once
// What following a pod's log needs to know of it, from the pod as the API server
// returns it: the container whose log is the run's, whether it has started, and what
// keeps it from starting (an image that cannot be pulled, a failed init container).

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace ktrain::kube {

/// The state of one container of a pod, as its containerStatuses say.
enum class ContainerState { kNone, kWaiting, kRunning, kTerminated };

/// The state of `container` of `pod` (kNone when the pod has no status for it).
ContainerState container_state(const nlohmann::json& pod, const std::string& container);

/// Why `container` of `pod` cannot start, in words, and the kind of problem (for
/// telling it once): a waiting reason other than the usual ones on the way to running,
/// or an init container that cannot pull its image or failed. ("", "") when none.
std::pair<std::string, std::string> blocked_start(const nlohmann::json& pod,
                                                  const std::string& container);

/// What keeps `container` of `pod` from starting, as the kubelet says it: the waiting
/// reason and message of the container, or of the init container that waits. ("", "")
/// when it is not waiting for a reason.
std::pair<std::string, std::string> waiting_reason(const nlohmann::json& pod,
                                                   const std::string& container);

/// What the log follower needs to know of a pod.
struct PodView {
  std::string name;
  std::string created;     ///< creationTimestamp (RFC 3339, seconds: sorts as text)
  std::uint64_t seen = 0;  ///< order of first sight: ties within a second (watch order)
  int index = -1;
  std::string container;  ///< whose log is followed
  std::string phase;
  std::string owner_uid;  ///< the uid of the object that controls it (its Job)
  ContainerState state = ContainerState::kNone;
  bool deleted = false;
  std::string blocked;       ///< why its container cannot start ("" when nothing is wrong)
  std::string blocked_key;   ///< the kind of `blocked` (ImagePullBackOff counts as ErrImagePull)
  std::string blocked_told;  ///< the blocked_key last told the user
};

/// Reads into `pv` what `pod` says now: its name, creation time, controller and phase; the
/// container to follow (chosen once: `container`, else the pod's log container);
/// that container's state (kept when the pod says none) and what blocks its start.
/// The follower's own fields (seen, index, deleted, blocked_told) are left as they are.
void read_pod_view(PodView& pv, const nlohmann::json& pod, const std::string& container);

/// Whether each index 0..indexes-1 of the Indexed Job `job_uid` has a pod in `pods` that
/// succeeded: the Job has then succeeded, whether or not its controller has said so yet
/// (its Complete condition comes up to a second later: it takes pod updates in batches).
bool every_index_succeeded(const std::map<std::string, PodView>& pods, const std::string& job_uid,
                           int indexes);

}  // namespace ktrain::kube
