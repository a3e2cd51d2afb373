#pragma once
// `ktrain build`: the training image = base + ktrain-launch + the workspace, made
// without a container daemon and pushed by digest.

#include <optional>
#include <string>
#include <vector>

#include "base/cuda.h"
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
  std::string cuda;  ///< the CUDA version recorded in the image ("12.1"), "" = none
};

/// Builds and publishes the project's image (used by `build` and `submit --build`).
BuildResult build_image(Env& env, const BuildOptions& opts);

/// The CUDA version that `image` says it needs (base/cuda.h: its label dev.ktrain.cuda,
/// CUDA_VERSION, ...), read from its registry, for `platform`; nullopt when it says none.
/// Throws Error when the image cannot be read (unknown, unreachable, refused).
std::optional<ImageCuda> inspect_image_cuda(Env& env, const std::string& image,
                                            const std::vector<std::string>& insecure_registries,
                                            const std::string& platform = "linux/amd64");

/// When the project runs GPU pods and says no train.cuda / serve.cuda, sets them from
/// what its image says (inspect_image_cuda). Nothing is changed when the image says
/// nothing or cannot be read; with -v, a note says which.
void fill_cuda_from_image(Env& env, project::Project& project,
                          const std::vector<std::string>& insecure_registries);

/// Builds and publishes the launcher image (FROM scratch, ktrain-launch at /) to
/// opts.launcher_image.
BuildResult build_launcher_image(Env& env, const BuildOptions& opts);

/// Registers `ktrain build`.
void add_build_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
