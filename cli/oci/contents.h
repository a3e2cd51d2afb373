#pragma once
// What goes into an image besides its base: ktrain-launch (and its GPU helper) staged
// into a layer, the workspace tree with .ktrainignore (or .dockerignore) and the
// project's ignore list, and the git source and revision that label the image.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "base/progress.h"
#include "oci/layer.h"
#include "project/project.h"

namespace ktrain::oci {

/// Where the launcher goes in a training image.
inline constexpr char kLauncherDir[] = "opt/ktrain/bin";
inline constexpr char kLauncherPath[] = "/opt/ktrain/bin/ktrain-launch";

/// The launcher's files: ktrain-launch (beside this binary, or $KTRAIN_LAUNCH_PATH),
/// and the GPU helper ktrain-gpucheck when it is beside it (the preflight's GPU and
/// NCCL checks need it; without it they are skipped). Throws Error (exit 2) when
/// ktrain-launch is not there.
std::vector<std::string> launcher_files(const Env& env);

/// A layer holding `files` under `prefix`, made from stable hard links in `stage_root`
/// (the cache folder), so that its cache entry stays valid while the files do not change.
LayerBlob make_launcher_layer(const std::vector<std::string>& files, const std::string& prefix,
                              const std::string& stage_root, LayerOptions lo, Progress& progress);

/// The workspace of an image: the tree under `context` placed at image.build.workdir,
/// without .git, ktrain's state folder, what the first of .ktrainignore and
/// .dockerignore excludes, and image.build.ignore.
struct Workspace {
  LayerSource source;
  std::string ignore_file;  ///< the ignore file read ("" when none)
};
Workspace workspace_of(const Env& env, const std::string& context, const project::ImageBuild& b);

/// What git leaves out of `context`: its untracked paths that the ignore files
/// (.gitignore, .git/info/exclude, core.excludesFile) exclude, relative to `context`, a
/// wholly ignored folder as one path. nullopt when `context` is not in a git work tree
/// or git is not installed. Tracked files are never in it, whatever the ignore files say.
std::optional<std::vector<std::string>> git_ignored(const Env& env, const std::string& context);

/// The OCI labels of where the workspace comes from: org.opencontainers.image.source
/// (the git remote, credentials taken out) and .revision (HEAD), those that git knows.
std::vector<std::pair<std::string, std::string>> source_labels(const Env& env,
                                                               const std::string& context);

/// `s` without leading and trailing slashes ("/workspace/" -> "workspace").
std::string strip_slashes(std::string s);

}  // namespace ktrain::oci
