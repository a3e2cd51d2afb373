#pragma once
// `ktrain render`: prints the Kubernetes objects that the project file stands for.

#include <optional>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/project_flags.h"
#include "render/kube_version.h"

namespace ktrain::cmd {

/// The flags and resolved state of `ktrain render`.
struct RenderCommandOptions {
  ProjectFlags project;
  bool strict = false;         ///< warnings (e.g. an unpinned image) are errors
  std::string templates_dir;   ///< --templates DIR: skeletons to use instead of the embedded ones
  std::string run_id;          ///< --run-id ID; "" = a stable id derived from the project
  std::string output;          ///< "yaml" or "json" (from the global -o)
  bool inspect_image = false;  ///< --inspect-image: the image's CUDA version from its registry
  std::vector<std::string> insecure_registries;  ///< --insecure-registry HOST
  std::string kube_version;  ///< --kube-version 1.N: the release to render for ("" = newest tested)
  std::string dry_run;       ///< --dry-run=server: the cluster's admission checks each object
  /// kube_version read by complete(); nullopt when not given or not a release.
  std::optional<render::KubeVersion> kube_release;

  /// Fills defaults from the global flags (-o), and reads --kube-version.
  void complete(const Env& env);
  /// Throws UsageError for an output format render cannot print, or a --kube-version
  /// that is no release.
  void validate() const;
  /// Renders and prints on env.out; warnings go to env.err. Returns the exit status.
  int run(Env& env) const;
};

/// Says on stderr, for a multi-node run of an operator's target, that its pods wait for
/// the rendezvous Secret that submit creates and render leaves out (a Job's pods do
/// without it), and how to make one for `kubectl apply`.
void note_rendezvous_secret(const Env& env, const project::Project& p);

/// Registers `ktrain render`.
void add_render_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
