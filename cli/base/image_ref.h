#pragma once
// Container image references, as the Docker/OCI distribution reference grammar
// defines them: [registry[:port]/]path[:tag][@algorithm:hex].

#include <string>
#include <string_view>

namespace ktrain {

/// A parsed and normalised image reference.
struct ImageRef {
  std::string registry;    ///< "docker.io" when the reference names none
  std::string repository;  ///< path, normalised ("ubuntu" -> "library/ubuntu" on docker.io)
  std::string tag;         ///< "" when none was given
  std::string digest;      ///< "algorithm:hex", "" when none was given

  /// The full reference: registry/repository[:tag][@digest].
  std::string str() const;
  /// registry/repository without tag or digest.
  std::string name() const;
  /// Whether the reference pins something (a tag or a digest).
  bool has_tag_or_digest() const { return !tag.empty() || !digest.empty(); }
};

/// Parses `ref`; throws UsageError saying what is wrong, with a valid example
/// ("expected an image reference like registry.example.com/team/app:v1").
/// `localhost`, and a first component with '.' or ':', name a registry.
ImageRef parse_image_ref(std::string_view ref);

/// Why `ref` is not a valid image reference, or "" when it is one.
std::string image_ref_problem(std::string_view ref);

}  // namespace ktrain
