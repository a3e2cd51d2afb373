#pragma once
// `ktrain dev`: an interactive pod made from the project's training job. It is node 0
// of a one-node run named `<name>-dev`, with the project's image, GPUs, resources,
// volumes, /dev/shm, environment and scheduling (ktrain-launch included, so that
// `ktrain-launch -- CMD` in it starts workers as a run would), whose container idles
// instead of training: until it is deleted, or until nothing but the idle loop has
// run in it for the idle timeout, when it ends (exit 0, the Job completes).

#include <cstdint>
#include <string>
#include <vector>

#include "project/project.h"
#include "render/render.h"

namespace ktrain::render {

/// On every object and pod of a dev pod's run: `list` shows it with the kind "dev".
inline constexpr const char* kLabelDev = "ktrain.dev/dev";
/// The run id of a project's dev pod: its run is `<name>-dev`.
inline constexpr const char* kDevRunId = "dev";
/// How long a finished dev pod's Job stays (its log says why it ended) when the
/// project sets no train.ttl.
inline constexpr std::int64_t kDevTtlSeconds = 600;

/// What a dev pod is made of, beyond the project.
struct DevSettings {
  /// Seconds with nothing running in the pod (no exec'd shell, no JupyterLab) after
  /// which it ends; 0 = never.
  std::int64_t idle_timeout_s = 3600;
  /// GPUs of the pod; -1 = train.gpus.
  int gpus = -1;
};

/// The dev pod's run name: `<name>-dev`.
std::string dev_run_name(const project::Project& project);

/// The container command that idles: a POSIX sh loop that looks every few seconds
/// for another process in its container (its mount and PID namespaces) and ends with
/// exit 0 after `idle_timeout_s` without one (never with 0); exit 0 on SIGTERM.
std::vector<std::string> dev_idle_command(std::int64_t idle_timeout_s);

/// How often (seconds) the idle loop looks for activity: a twentieth of the timeout,
/// within 1..30 s.
std::int64_t dev_idle_step(std::int64_t idle_timeout_s);

/// The project made into its dev pod's: one node, the target job, no sweep, no
/// serve section, no deadline, restarts 0, the dev label. Throws UsageError when the
/// project has no train section.
project::Project dev_project(const project::Project& project, const DevSettings& settings);

/// The dev pod's objects (its Service and Job, a PodGroup with Volcano), rendered from
/// dev_project with run id kDevRunId, the training container's command replaced by
/// dev_idle_command. `options.run_id` is ignored.
Rendered render_dev(const project::Project& project, const DevSettings& settings,
                    RenderOptions options);

}  // namespace ktrain::render
