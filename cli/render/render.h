#pragma once
// Project -> Kubernetes objects. Rendering starts from the skeletons of templates/
// (embedded, or a folder given with --templates), sets fields structurally, applies
// the project's `patches` last, and is deterministic: the same project and options
// give the same objects, in the same order, with the same key order.
//
// What is rendered:
//   train:  per run (one per sweep combination): [PodGroup (gang: volcano)],
//           a headless Service, and an Indexed batch/v1 Job, all named after the run.
//   serve:  a Deployment, a ClusterIP Service and, with autoscale, an
//           autoscaling/v2 HorizontalPodAutoscaler, all named after the project
//           (`<name>`, no run id: a service is long-lived and is updated in place).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/project.h"
#include "project/sweep.h"
#include "render/kube_version.h"
#include "render/yaml_json.h"

namespace ktrain {
class FileSystem;
}

namespace ktrain::render {

/// Label keys that ktrain puts on everything it renders.
inline constexpr const char* kLabelName = "app.kubernetes.io/name";
inline constexpr const char* kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kLabelRun = "ktrain.dev/run";
inline constexpr const char* kLabelSweep = "ktrain.dev/sweep";
inline constexpr const char* kLabelKueueQueue = "kueue.x-k8s.io/queue-name";
/// On the Job of a sweep's run that waits for a place (train.sweep.parallel): it is
/// created suspended, and started when one of the sweep's runs ends.
inline constexpr const char* kLabelQueued = "ktrain.dev/queued";
/// On a waiting Job (kLabelQueued) of a project with a Kueue LocalQueue: the queue, whose
/// label the Job gets only when it is released, so that Kueue does not admit it before.
inline constexpr const char* kAnnotationQueue = "ktrain.dev/queue-name";
/// On the Job of a sweep's run: its combination, as a JSON object of strings.
inline constexpr const char* kAnnotationParams = "ktrain.dev/params";
inline constexpr const char* kAnnotationVolcanoGroup = "scheduling.k8s.io/group-name";
/// On the pods of a project that uses GPUs and whose CUDA version is known: that version
/// ("12.1"), which their node affinity asks of the nodes' drivers (base/cuda.h).
inline constexpr const char* kAnnotationCuda = "ktrain.dev/cuda";
/// On the pods of a target whose operator names the training container (pytorch,
/// tensorflow, mpi, node): that name, for `ktrain logs` and `kubectl logs` alike.
inline constexpr const char* kAnnotationDefaultContainer =
    "kubectl.kubernetes.io/default-container";

/// The init container that copies ktrain-launch into pods whose image lacks it, and
/// where the training container finds the launcher.
inline constexpr const char* kLauncherContainer = "ktrain-launcher";
inline constexpr const char* kLauncherDir = "/opt/ktrain/bin";

/// Ports of the training pods (launch-env.md).
inline constexpr int kRdzvPort = 29400;
inline constexpr int kMasterPort = 29500;

/// How to render.
struct RenderOptions {
  /// The run id: "" = default_run_id(project) (stable for the same project).
  std::string run_id;
  /// Every warning (e.g. a `:latest` image) becomes an error (exit status 2).
  bool strict = false;
  /// A folder with the same file names as templates/ to use instead of the embedded
  /// skeletons; "" = the embedded ones.
  std::string templates_dir;
  /// Reads templates_dir; nullptr = the real file system.
  FileSystem* fs = nullptr;
  /// Overrides image.ref, e.g. with the digest reference that `ktrain build` pushed.
  std::string image;
  /// Runs of a sweep with train.sweep.parallel that have been started already (a
  /// submit again with the same run id): rendered as started, never as waiting.
  std::set<std::string> started;
  /// The Kubernetes release rendered for: the API server's at submit, --kube-version
  /// (default the newest tested) at render. Fields it does not serve are left out.
  KubeVersion kube_version = kNewestTested;
};

/// The result of a render: the objects, in apply order, and warnings for stderr.
struct Rendered {
  std::vector<nlohmann::ordered_json> objects;
  std::vector<std::string> warnings;
};

/// Renders `project`. Throws UsageError for a bad run id, a missing template, or
/// (with options.strict) anything that would otherwise be a warning; Error for a
/// template that is not valid YAML.
Rendered render_project(const project::Project& project, const RenderOptions& options);

/// The same, handing each object to `each` as soon as it is finished (nulls pruned,
/// patches applied) instead of keeping them all: a sweep of thousands of runs holds one
/// run's objects at a time. Returns the warnings; throws as render_project does.
std::vector<std::string> render_each(const project::Project& project, const RenderOptions& options,
                                     const std::function<void(nlohmann::ordered_json&&)>& each);

/// The image every container runs: options.image, else image.ref, else the repository
/// that image.build pushes to. Throws UsageError when there is none.
std::string image_to_run(const project::Project& project, const RenderOptions& options);

/// How a training run gets ktrain-launch.
struct LauncherPlan {
  bool inject = false;  ///< an init container copies it from `image` into an emptyDir
  std::string image;    ///< the launcher image (when injected)
  std::string reason;   ///< in words, for `validate`
};

/// The plan for running `image`: injected, unless launcher.inject is never, or is auto
/// and `image` is in the repository that image.build pushes to (ktrain build bakes the
/// launcher in).
LauncherPlan launcher_plan(const project::Project& project, const std::string& image);

/// The run name `<name>-<run_id>`.
std::string run_name(const project::Project& project, const std::string& run_id);

/// The run names of a render, in order: one, or for a sweep `<name>-<run_id>-<k>` for
/// k = 0..n-1 over the grid (first parameter varying slowest; project/sweep.h).
std::vector<std::string> run_names(const project::Project& project, const std::string& run_id);

/// A stable run id of 5 characters [a-z0-9], derived from a hash of what the project
/// renders to (with `options` but its run_id ignored), so that plain `ktrain render`
/// is deterministic. `ktrain submit` uses random_run_id instead.
std::string default_run_id(const project::Project& project, const RenderOptions& options = {});

/// A run id of 5 characters [a-z0-9] made from `entropy` (e.g. random bytes or a time).
std::string run_id_from(std::uint64_t entropy);

/// Throws UsageError unless `run_id` can be used in names: a DNS-1123 label
/// ([a-z0-9]([-a-z0-9]*[a-z0-9])?) and short enough that every pod's host name
/// (`<run>-<rank>`, sweeps `<run>-<k>-<rank>`) stays within 63 characters.
void validate_run_id(const project::Project& project, const std::string& run_id);

/// Multiplies a Kubernetes quantity ("500m", "1.5", "64Gi", "8") by `n`, keeping its
/// suffix ("500m" x 4 = "2000m"). Throws Error for something that is not a quantity.
std::string multiply_quantity(const std::string& quantity, int n);

/// Why `ref` is not a pinned image ("" when it is fine): no tag and no digest, or the
/// tag `latest`.
std::string image_pin_problem(const std::string& ref);

}  // namespace ktrain::render
