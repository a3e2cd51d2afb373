#pragma once
// The Kubernetes release that manifests are rendered for: the API server's (submit,
// serve, dev read its /version) or --kube-version (render, with no cluster). Job fields
// that came after the oldest release ktrain supports are rendered only where the
// release serves them on by default; a field the project asks for that the release
// lacks is an error, not a manifest whose field the server would silently drop.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ktrain::render {

/// A Kubernetes release, major.minor.
struct KubeVersion {
  int major = 1;
  int minor = 0;
  auto operator<=>(const KubeVersion&) const = default;
  /// "1.36".
  std::string str() const;
};

/// The releases the test suite runs against (tests/fixtures/k8s): the oldest the
/// project supports and the newest it has tried (render's default).
inline constexpr KubeVersion kOldestTested{1, 32};
inline constexpr KubeVersion kNewestTested{1, 36};

/// "1.36", "v1.36", "1.36.3", "v1.36.3-gke.1": the release; nullopt for anything else.
std::optional<KubeVersion> parse_kube_version(std::string_view text);

/// The release of an API server's /version answer: its `major` and `minor` ("36", or
/// "36+" as some distributions say), else its `git_version`; nullopt when neither says.
std::optional<KubeVersion> kube_version_from(std::string_view major, std::string_view minor,
                                             std::string_view git_version);

/// kube_version_from of a /version answer (json or ordered_json); fields that are not
/// strings count as missing.
template <typename Json>
std::optional<KubeVersion> kube_version_of(const Json& version) {
  if (!version.is_object()) return std::nullopt;
  auto text = [&version](const char* key) -> std::string {
    auto it = version.find(key);
    return it != version.end() && it->is_string() ? it->template get<std::string>() : "";
  };
  return kube_version_from(text("major"), text("minor"), text("gitVersion"));
}

/// "" for a release the suite tests; else what to say of it: "Kubernetes 1.28, older
/// than 1.32, the oldest ktrain is tested against: ..." (for a warning).
std::string untested_release(const KubeVersion& v);

/// The fields ktrain renders only where the release serves them.
enum class KubeFeature {
  /// Job spec.podReplacementPolicy (beta and on from 1.29, GA 1.34): Failed starts a
  /// rank's replacement only once the old pod is gone, so no rank registers twice.
  kPodReplacementPolicy,
  /// Job spec.managedBy (beta and on from 1.32, GA 1.35): another controller (MultiKueue)
  /// runs the Job. Before, the field is dropped and the Job runs here.
  kJobManagedBy,
};

/// The first release that serves `f` on by default.
KubeVersion feature_since(KubeFeature f);
/// Whether release `v` serves `f` on by default.
bool has_feature(const KubeVersion& v, KubeFeature f);

}  // namespace ktrain::render
