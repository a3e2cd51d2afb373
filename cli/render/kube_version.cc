// The Kubernetes release manifests are rendered for (render/kube_version.h).
#include "render/kube_version.h"

namespace ktrain::render {

namespace {

/// A whole number at the front of `s` (at most 4 digits), advancing `s`; nullopt when
/// `s` does not start with a digit.
std::optional<int> number(std::string_view& s) {
  int n = 0;
  std::size_t i = 0;
  for (; i < s.size() && i < 4 && s[i] >= '0' && s[i] <= '9'; ++i) n = n * 10 + (s[i] - '0');
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return n;
}

}  // namespace

std::string KubeVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<KubeVersion> parse_kube_version(std::string_view text) {
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  const auto major = number(text);
  if (!major || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  const auto minor = number(text);
  if (!minor) return std::nullopt;
  // What may follow: a patch release, then a pre-release or a distribution's suffix.
  if (!text.empty() && text.front() == '.') {
    text.remove_prefix(1);
    if (!number(text)) return std::nullopt;
  }
  if (!text.empty() && text.front() != '-' && text.front() != '+') return std::nullopt;
  return KubeVersion{*major, *minor};
}

std::optional<KubeVersion> kube_version_from(std::string_view major, std::string_view minor,
                                             std::string_view git_version) {
  const auto ma = number(major);
  const auto mi = number(minor);
  if (ma && mi && major.empty() && (minor.empty() || minor == "+")) return KubeVersion{*ma, *mi};
  return parse_kube_version(git_version);
}

std::string untested_release(const KubeVersion& v) {
  if (v < kOldestTested) {
    return "Kubernetes " + v.str() + ", older than " + kOldestTested.str() +
           ", the oldest ktrain is tested against: some of what it renders may be refused or "
           "ignored there";
  }
  if (v > kNewestTested) {
    return "Kubernetes " + v.str() + ", newer than " + kNewestTested.str() +
           ", the newest ktrain is tested against";
  }
  return "";
}

KubeVersion feature_since(KubeFeature f) {
  switch (f) {
    case KubeFeature::kPodReplacementPolicy:
      return {1, 29};
    case KubeFeature::kJobManagedBy:
      return {1, 32};
  }
  return kNewestTested;
}

bool has_feature(const KubeVersion& v, KubeFeature f) {
  return v >= feature_since(f);
}

}  // namespace ktrain::render
