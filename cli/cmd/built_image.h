#pragma once
// Which image a project's pods run: the one `ktrain build` pushed last (by digest, from
// .ktrain/build.json), the tag image.ref names, or a stock image; and why, for validate.

#include <optional>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "oci/build_record.h"
#include "project/project.h"

namespace ktrain::cmd {

/// The image a project's pods run, and what `validate` says of it.
struct ImageChoice {
  std::string image;  ///< what the pods name ("" = nothing to run)
  std::string why;    ///< one line: where it comes from
  /// Not empty when the pods would pull what no build pushed (image.build with no tag
  /// and nothing built here): submit refuses, render and validate warn.
  std::string problem;
  /// Not empty when image.ref names a tag of the built repository that the last build
  /// did not push (it runs whatever that tag is in the registry).
  std::string warning;
  std::string cuda;  ///< the CUDA version the built image records ("" = none or not built)
};

/// The choice for `p`, given the record's entry for its image.build.repository
/// (`built`, nullopt when none) kept at `record_path`. No I/O.
ImageChoice choose_image(const project::Project& p, const std::optional<oci::BuiltImage>& built,
                         const std::string& record_path);

/// Reads the project's build record (when it has image.build) and chooses. Throws
/// Error when the record is there but unreadable.
ImageChoice image_choice(Env& env, const project::Project& p);

/// `p` as its pods run it: image.ref set to the chosen image, and train.cuda / serve.cuda
/// from the built image when the project sets none. With `strict` (submit, serve, dev),
/// a problem is a UsageError (exit 2, nothing sent); else a warning on stderr. Returns
/// the choice (for validate to say it); nullopt without image.build.
std::optional<ImageChoice> use_built_image(Env& env, project::Project& p, bool strict);

/// Writes `built` into the build record of the project in `project_dir` (creating
/// .ktrain/ with a .gitignore that keeps it out of git). A failure is a warning: the
/// image is pushed either way, and build prints its reference.
void save_built_image(Env& env, const std::string& project_dir, const oci::BuiltImage& built);

/// Where submit pushes the launcher image that a run needs, and how.
struct LauncherPush {
  std::string to;    ///< --push-launcher: a repository[:tag] ("" = beside image.build.repository)
  bool push = true;  ///< false (a server dry run): the reference only, nothing pushed
  std::vector<std::string> insecure_registries;
  std::string platform = "linux/amd64";
  std::string verb = "submit";  ///< the command whose flag the refusal names
};

/// Adds --push-launcher REF to `sub` (submit, dev), into `to`.
void add_push_launcher_flag(CLI::App& sub, std::string& to);

/// Checks --push-launcher REF as a command line gives it: a repository[:tag], not a
/// digest. Throws UsageError.
void check_push_launcher_flag(const std::string& ref);

/// The launcher image of a run whose image lacks ktrain-launch (launcher_plan injects
/// it). The one the project names (launcher.image, KTRAIN_LAUNCHER_IMAGE) is used as it
/// is; ktrain's default is not published, so submit pushes the launcher image (built
/// here, reproducibly: pushed once, its layer skipped when the registry has it) to
/// `how.to`, else beside image.build.repository (REGISTRY/PATH/ktrain-launch:VERSION),
/// and runs it by digest. With neither, throws UsageError saying what to run. Nothing
/// is done when the run needs no launcher image.
void provide_launcher_image(Env& env, project::Project& p, const LauncherPush& how);

/// When the project runs GPU pods and says no train.cuda / serve.cuda, sets them from
/// what its image says (oci::inspect_image_cuda). Nothing is changed when the image says
/// nothing or cannot be read; with -v, a note says which.
void fill_cuda_from_image(Env& env, project::Project& project,
                          const std::vector<std::string>& insecure_registries);

}  // namespace ktrain::cmd
