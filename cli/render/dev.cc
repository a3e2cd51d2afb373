#include "render/dev.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace ktrain::render {

namespace {

/// The idle loop ($1: the idle timeout in seconds, 0 = never; $2: how often to look).
/// Another process counts when it runs in this container (an exec'd shell, JupyterLab):
/// any other process when the loop is PID 1 (the container has a PID namespace of its
/// own, as kubelets give it), else one that shares the loop's mount and PID namespaces;
/// where namespaces cannot be compared, any other process. SIGTERM (delete, --stop)
/// ends it with 0.
/// It has no "$$": the kubelet makes "$$" of a container's command "$" (and expands
/// "$(NAME)"), so its own pid is read from /proc/self/stat by the shell itself.
constexpr const char* kIdleScript = R"SH(idle=$1 step=$2 quiet=0
trap 'exit 0' TERM INT
read -r me _ </proc/self/stat
ns=1
[ "/proc/$me/ns/mnt" -ef "/proc/$me/ns/mnt" ] 2>/dev/null || ns=0
[ "$me" = 1 ] && ns=0
if [ "$idle" -gt 0 ]; then
  echo "ktrain dev: ready; ends after ${idle}s with nothing else running in it"
else
  echo "ktrain dev: ready; runs until deleted"
fi
while :; do
  sleep "$step" & wait $!
  [ "$idle" -gt 0 ] || continue
  busy=0
  for d in /proc/[0-9]*; do
    [ "$d" = "/proc/$me" ] && continue
    if [ $ns = 0 ] || { [ "$d/ns/mnt" -ef "/proc/$me/ns/mnt" ] && [ "$d/ns/pid" -ef "/proc/$me/ns/pid" ]; } 2>/dev/null; then
      busy=1
      break
    fi
  done
  if [ $busy = 1 ]; then quiet=0; else quiet=$((quiet + step)); fi
  if [ $quiet -ge "$idle" ]; then
    echo "ktrain dev: nothing else ran in it for ${quiet}s (idle timeout ${idle}s): ending"
    exit 0
  fi
done
)SH";

}  // namespace

std::string dev_run_name(const project::Project& project) {
  return run_name(project, kDevRunId);
}

std::int64_t dev_idle_step(std::int64_t idle_timeout_s) {
  if (idle_timeout_s <= 0) return 3600;
  return std::clamp<std::int64_t>(idle_timeout_s / 20, 1, 30);
}

std::vector<std::string> dev_idle_command(std::int64_t idle_timeout_s) {
  const std::int64_t idle = std::max<std::int64_t>(idle_timeout_s, 0);
  return {"/bin/sh",
          "-c",
          kIdleScript,
          "ktrain-dev",
          std::to_string(idle),
          std::to_string(dev_idle_step(idle))};
}

project::Project dev_project(const project::Project& project, const DevSettings& settings) {
  if (!project.train) {
    throw UsageError(project.file +
                     ": ktrain dev makes its pod from the train section (image, GPUs, "
                     "resources, volumes, env), and the project has none");
  }
  project::Project p = project;
  auto& t = *p.train;
  t.target = "job";
  t.runtime.clear();
  t.nodes = 1;
  if (settings.gpus >= 0) t.gpus = settings.gpus;
  t.sweep.clear();
  t.sweep_parallel = 0;
  t.restarts = 0;
  t.retry.clear();
  t.watchdog_s = 0;  // a shell may sit quiet for hours
  t.deadline_s.reset();
  if (!t.ttl_s) t.ttl_s = kDevTtlSeconds;
  // A dev pod is where a broken GPU or NCCL gets looked at: nothing checks them first.
  t.preflight = "off";
  p.serve.reset();
  // The dev pod runs on this cluster, where exec and port-forward reach it.
  p.scheduling.managed_by.clear();
  std::erase_if(p.labels, [](const auto& kv) { return kv.first == kLabelDev; });
  p.labels.insert(p.labels.begin(), {kLabelDev, "true"});
  return p;
}

Rendered render_dev(const project::Project& project, const DevSettings& settings,
                    RenderOptions options) {
  const project::Project p = dev_project(project, settings);
  options.run_id = kDevRunId;
  Rendered r = render_project(p, options);
  bool found = false;
  for (auto& o : r.objects) {
    if (o.value("kind", "") != "Job") continue;
    auto& containers = o["spec"]["template"]["spec"]["containers"];
    if (!containers.is_array()) continue;
    for (auto& c : containers) {
      if (c.value("name", "") != "train") continue;
      c["command"] = dev_idle_command(settings.idle_timeout_s);
      c.erase("args");
      found = true;
    }
  }
  if (!found) {
    throw UsageError(project.file +
                     ": the dev pod's Job has no container named train (do patches rename it?)");
  }
  return r;
}

}  // namespace ktrain::render
