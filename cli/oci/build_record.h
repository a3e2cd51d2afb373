#pragma once
// What `ktrain build` pushed, recorded beside the project (.ktrain/build.json) so that
// render and submit run exactly that image, by digest, without a rebuild.

#include <optional>
#include <string>
#include <vector>

namespace ktrain::oci {

/// The last image built and pushed to one repository.
struct BuiltImage {
  std::string repository;         ///< registry/repository, without tag or digest
  std::string digest;             ///< sha256:...
  std::vector<std::string> tags;  ///< the tags pushed with it
  std::string cuda;               ///< the CUDA version recorded in the image ("" = none)
  std::string built;              ///< when, RFC 3339 (UTC)
  std::string onto;               ///< a synced image: the full build under it ("" = a build)
  int depth = 0;                  ///< a synced image: its sync layers on that build

  /// repository@digest.
  std::string reference() const { return repository + "@" + digest; }
};

/// The folder of ktrain's state beside a project (`<dir>/.ktrain`), left out of the
/// image that build makes of that folder.
inline constexpr const char* kStateDir = ".ktrain";

/// `<project_dir>/.ktrain/build.json`.
std::string build_record_path(const std::string& project_dir);

/// The entry for `repository` in a record's text; nullopt when there is none. Throws
/// Error naming `path` when the text is not a record (hand-edited, cut short).
std::optional<BuiltImage> find_built_image(const std::string& record_text,
                                           const std::string& repository, const std::string& path);

/// The record's text with `built` as the entry of its repository (other repositories'
/// entries are kept). `record_text` may be empty (no record yet).
std::string record_built_image(const std::string& record_text, const BuiltImage& built);

}  // namespace ktrain::oci
