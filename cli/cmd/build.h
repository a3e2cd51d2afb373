#pragma once
// `ktrain build`: its flags, and what it prints. The image pipeline (oci/pipeline.h)
// does the work: the training image = base + ktrain-launch + the workspace, made
// without a container daemon and pushed by digest.

#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/project_flags.h"
#include "oci/pipeline.h"

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
  bool sync = false;       ///< --sync: only what changed since the last build, as a layer on it

  /// Throws UsageError for bad flag values.
  void validate() const;
  /// The pipeline's settings from the flags.
  oci::BuildSettings settings() const;
  /// Builds and publishes; prints only `repository@sha256:...` on env.out. Returns the
  /// exit status.
  int run(Env& env) const;
};

/// Builds and publishes the project's image (used by `build` and `submit --build`), and
/// records what it pushed in .ktrain/build.json beside the project file, so that
/// render and submit run that digest from now on. With opts.sync, only what changed
/// since the recorded image goes, as a layer on it (a full build when none is recorded).
oci::BuildResult build_image(Env& env, const BuildOptions& opts);

/// Registers `ktrain build`.
void add_build_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
