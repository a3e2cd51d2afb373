#pragma once
// The image pipeline, without a container daemon: a project's training image (its
// base + ktrain-launch + the workspace) and the launcher image (FROM scratch), made
// from cached layers and published by digest, or written as an OCI image layout. The
// verbs (`build`, `submit --build`) parse flags and print; this does the work.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "project/project.h"

namespace ktrain::oci {

/// How an image is built and published.
struct BuildSettings {
  std::string platform = "linux/amd64";          ///< of the base image: os/arch[/variant]
  std::string oci_layout;                        ///< write this folder instead of pushing
  std::vector<std::string> insecure_registries;  ///< hosts spoken to over plain HTTP
  std::vector<std::string> tags;                 ///< also pushed under these tags
  std::string compression = "gzip";              ///< gzip or zstd
  bool no_cache = false;                         ///< rebuild every layer
  bool no_stream = false;                        ///< upload the workspace layer after building it
};

/// What a build produced.
struct BuildResult {
  std::string reference;  ///< repository@sha256:... (or oci:DIR@sha256:...)
  std::string digest;
  std::uint64_t bytes_uploaded = 0;
  std::string cuda;               ///< the CUDA version recorded in the image ("12.1"), "" = none
  std::string repository;         ///< registry/repository pushed to ("" for a layout)
  std::vector<std::string> tags;  ///< the tags pushed
  // A sync (sync_project_image):
  std::string onto;         ///< the full build under its sync layers ("" for a full build)
  int depth = 0;            ///< sync layers on that build
  std::size_t changed = 0;  ///< entries the sync layer adds or replaces
  std::size_t removed = 0;  ///< whiteouts in it
  bool whole = false;       ///< what the image held was unknown here: the whole workspace went
  bool unchanged = false;   ///< nothing changed: `reference` is the image synced onto
};

/// The image a sync goes on: the one the build record names.
struct SyncBase {
  std::string digest;             ///< what the last build or sync pushed
  std::string onto;               ///< the full build under it ("" when it is one)
  int depth = 0;                  ///< sync layers between
  std::vector<std::string> tags;  ///< the tags it was pushed under (moved to the new image)
};

/// The most sync layers on one build; the next sync puts every change since the build
/// in one layer on the build itself.
inline constexpr int kMaxSyncDepth = 16;

/// Builds `project`'s image (image.build) and publishes it: to image.build.repository
/// under its tag, settings.tags and the tag that image.ref names in that repository,
/// or to settings.oci_layout. Throws UsageError when image.build is not set.
BuildResult build_project_image(Env& env, const project::Project& project,
                                const BuildSettings& settings);

/// Publishes the workspace's changes since `base` (files added or changed, whiteouts for
/// those gone) as one thin layer on it, pushed by digest to image.build.repository under
/// base.tags and settings.tags; unchanged files cost nothing. What `base` holds is known
/// from the trees kept in the layer cache; when it is not, the whole workspace goes in
/// the layer (and a warning says so). Nothing is pushed when nothing changed.
BuildResult sync_project_image(Env& env, const project::Project& project,
                               const BuildSettings& settings, const SyncBase& base);

/// Builds the launcher image (FROM scratch, ktrain-launch at /) and publishes it to
/// `reference` (a repository and tag; default tag: this version).
BuildResult build_launcher_image(Env& env, const std::string& reference,
                                 const BuildSettings& settings);

/// A Dockerfile that makes the same image as build_project_image.
std::string dockerfile_of(const project::ImageBuild& b);

}  // namespace ktrain::oci
