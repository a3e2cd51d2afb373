// Telling image pulls that cannot succeed from those that may.

#include "kube/pull_failure.h"

#include <algorithm>
#include <cctype>

#include "base/text.h"

namespace ktrain::kube {

bool is_pull_failure_reason(const std::string& reason) {
  return reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName" ||
         reason == "ErrImageNeverPull";
}

bool pull_failure_is_permanent(const std::string& reason, const std::string& message) {
  if (reason == "InvalidImageName" || reason == "ErrImageNeverPull") return true;
  if (reason != "ErrImagePull" && reason != "ImagePullBackOff") return false;
  // What containerd, CRI-O and the registries say (through the kubelet) when retrying
  // cannot help. Timeouts, refused connections, 5xx and 429 are not among them.
  static const char* const kPermanent[] = {
      "not found",                     // containerd: "...: not found"; NotFound
      "manifest unknown",              // the distribution spec's MANIFEST_UNKNOWN
      "name unknown",                  // NAME_UNKNOWN: no such repository
      "unauthorized",                  // 401
      "authentication required",       // CRI-O, docker.io
      "pull access denied",            // docker.io for a private or missing repository
      "insufficient_scope",            // a token without pull rights
      "403 forbidden",                 // a registry that refuses
      "denied: ",                      // DENIED: requested access to the resource is denied
      "invalid reference format",      // a reference that does not parse
      "repository name must",          // "... must be lowercase" and the like
      "no matching manifest for",      // no image for the node's platform
      "does not match the specified",  // "... platform"
  };
  const std::string m = ascii_lower(message);
  for (const char* p : kPermanent) {
    if (m.find(p) != std::string::npos) return true;
  }
  return false;
}

void PullFailureWatch::observe(int node, const std::string& reason, const std::string& message,
                               std::chrono::steady_clock::time_point now) {
  if (!is_pull_failure_reason(reason)) {
    failing_.erase(node);
    return;
  }
  if (pull_failure_is_permanent(reason, message)) {
    failing_.try_emplace(node, Failing{now, reason + ": " + message});
    return;
  }
  // The back-off between two failed pulls goes on with the failure it follows; a pull
  // that failed for a reason that may pass starts the count again.
  if (reason == "ErrImagePull") failing_.erase(node);
}

std::optional<std::string> PullFailureWatch::given_up(
    std::chrono::steady_clock::time_point now) const {
  for (const auto& [node, f] : failing_) {
    if (now - f.since >= kPullGiveUp) return "node " + std::to_string(node) + ": " + f.what;
  }
  return std::nullopt;
}

}  // namespace ktrain::kube
