#pragma once
// The image pipeline, without a container daemon: a project's training image (its
// base + ktrain-launch + the workspace) and the launcher image (FROM scratch), made
// from cached layers and published by digest, or written as an OCI image layout. The
// verbs (`build`, `submit --build`) parse flags and print; this does the work.

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
};

/// Builds `project`'s image (image.build) and publishes it: to image.build.repository
/// under its tag, settings.tags and the tag that image.ref names in that repository,
/// or to settings.oci_layout. Throws UsageError when image.build is not set.
BuildResult build_project_image(Env& env, const project::Project& project,
                                const BuildSettings& settings);

/// Builds the launcher image (FROM scratch, ktrain-launch at /) and publishes it to
/// `reference` (a repository and tag; default tag: this version).
BuildResult build_launcher_image(Env& env, const std::string& reference,
                                 const BuildSettings& settings);

/// A Dockerfile that makes the same image as build_project_image.
std::string dockerfile_of(const project::ImageBuild& b);

}  // namespace ktrain::oci
