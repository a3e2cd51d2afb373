#pragma once
// `ktrain build`: the training image = base + ktrain-launch + the workspace, made
// without a container daemon and pushed by digest.

#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/project_flags.h"

namespace ktrain::cmd {

/// The flags and resolved state of `ktrain build`.
struct BuildOptions {
  ProjectFlags project;
  std::string platform = "linux/amd64";  ///< --platform os/arch[/variant]
  std::string oci_layout;                ///< --oci-layout DIR ("" = push)
  bool dockerfile = false;               ///< --dockerfile: print an equivalent Dockerfile
  std::string launcher_image;            ///< --launcher-image REF: build the launcher image instead
  std::vector<std::string> insecure_registries;  ///< --insecure-registry HOST
  std::vector<std::string> tags;                 ///< --tag T: also push under these tags
  std::string compression = "gzip";              ///< --compression gzip|zstd
  bool no_cache = false;                         ///< --no-cache: rebuild every layer
  bool no_stream = false;  ///< --no-stream: upload the workspace layer after building it

  /// Throws UsageError for bad flag values.
  void validate() const;
  /// Builds and publishes; prints only `repository@sha256:...` on env.out. Returns the
  /// exit status.
  int run(Env& env) const;
};

/// What a build produced.
struct BuildResult {
  std::string reference;  ///< repository@sha256:... (or oci:DIR@sha256:...)
  std::string digest;
  std::uint64_t bytes_uploaded = 0;
};

/// Builds and publishes the project's image (used by `build` and `submit --build`).
BuildResult build_image(Env& env, const BuildOptions& opts);

/// Builds and publishes the launcher image (FROM scratch, ktrain-launch at /) to
/// opts.launcher_image.
BuildResult build_launcher_image(Env& env, const BuildOptions& opts);

/// Registers `ktrain build`.
void add_build_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
