// KubeBackend::submit: a project's training runs rendered on a thread of their own and
// applied while later runs are still being rendered (a sweep of thousands streams).
#include <exception>
#include <functional>
#include <set>
#include <thread>

#include "backend/kube_backend.h"
#include "backend/kube_shared.h"
#include "backend/run_id.h"
#include "base/error.h"
#include "kube/run_state.h"
#include "render/render.h"

namespace ktrain::backend {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace detail;

namespace {

/// A stop of the feed's consumer, thrown through render_each to end the render.
struct FeedStopped {};

}  // namespace

SubmitResult KubeBackend::submit(const project::Project& project, const SubmitOptions& opts) {
  if (!project.train) {
    throw UsageError(project.file +
                     ": there is no train section to submit (use 'ktrain serve' "
                     "for the serve section)");
  }
  const std::string ns = namespace_for(project);
  const auto& target = render::targets::train_target(project.train->target);
  require_api(target.api, "train.target", target.name);
  render::RenderOptions ro;
  ro.run_id = opts.run_id.empty() ? random_run_id() : opts.run_id;
  ro.kube_version = kube_version();  // what the server serves is rendered, nothing more
  const auto names = render::run_names(project, ro.run_id);
  const std::set<std::string> runs(names.begin(), names.end());
  if (project.train->sweep_parallel > 0 && !opts.run_id.empty()) {
    // Submitted again: the runs of the sweep started already stay started (an apply
    // with suspend would stop them).
    kube::ListOptions lo;
    lo.label_selector = std::string(kube::kLabelSweep) + "=" + project.name + "-" + ro.run_id;
    lo.drop_keys = kSummaryDropKeys;
    client_.list(kube::collection_path(kube::resource_type("batch/v1", "Job"), ns), lo,
                 [&ro](json& job) {
                   const auto& l = job["metadata"]["labels"];
                   if (l.value(render::kLabelQueued, "") != "true") {
                     ro.started.insert(job["metadata"].value("name", ""));
                   }
                 });
  }
  // The renderer makes each object into its request as it is rendered (and frees its
  // tree), and hands over each run's objects together; they are sent while the later
  // runs are rendered.
  PreparedFeed feed;
  std::vector<std::string> warnings;
  std::thread renderer([&] {
    std::exception_ptr error;
    try {
      PreparedFeed::Group group;
      std::string group_run;
      warnings = render::render_each(project, ro, [&](ordered_json&& obj) {
        const std::string run = label_of(obj, kRunLabel);
        if (!runs.count(run)) return;  // the serve objects
        if (run != group_run && !group.empty()) {
          if (!feed.push(std::move(group))) throw FeedStopped();
          group.clear();
        }
        group_run = run;
        if (obj["metadata"].is_object() && !obj["metadata"].contains("namespace")) {
          obj["metadata"]["namespace"] = ns;
        }
        if (obj.value("kind", "") == target.api.kind && target.rendezvous) {
          ordered_json labels = obj["metadata"]["labels"];
          labels.erase(render::kLabelQueued);  // the Job's state, not the Secret's
          auto secret =
              prepare(rendezvous_secret(run, ns, labels, random_token()), opts.dry_run_server);
          if (target.api.crd[0] != '\0') secret.step = 4;  // after its owner, the operator's object
          group.push_back(std::move(secret));
        }
        group.push_back(prepare(obj, opts.dry_run_server));
      });
      if (!group.empty()) feed.push(std::move(group));
    } catch (const FeedStopped&) {
    } catch (...) {
      error = std::current_exception();
    }
    feed.close(error);
  });
  struct Join {
    std::thread& thread;
    PreparedFeed& feed;
    void operator()() {
      feed.stop();
      if (thread.joinable()) thread.join();
    }
    ~Join() { (*this)(); }
  } join{renderer, feed};

  SubmitResult result;
  result.runs = names;
  try {
    // A Secret, a Service and a Job per run, and a PodGroup with Volcano; a Secret and
    // the operator's object for other targets (no Secret for an MPIJob).
    const bool own_pod_group = project.scheduling.gang == "volcano" &&
                               (target.api.crd[0] == '\0' || std::string(target.name) == "jobset");
    // A TrainJob of an image without the launcher brings its own TrainingRuntime.
    const bool own_runtime =
        std::string(target.name) == "trainjob" &&
        render::launcher_plan(project, render::image_to_run(project, ro)).inject;
    const std::size_t per_run = (target.api.crd[0] == '\0' ? 3 : 1 + (target.rendezvous ? 1 : 0)) +
                                (own_pod_group ? 1 : 0) + (own_runtime ? 1 : 0);
    std::function<void(std::size_t)> on_sent;
    if (opts.progress) {
      on_sent = [&](std::size_t n) { opts.progress(n, names.size() * per_run); };
    }
    result.objects = apply_feed(feed, opts.dry_run_server, on_sent);
  } catch (const Error& e) {
    join();
    for (const auto& w : warnings) env_.warn(w);
    if (feed.error()) throw;  // the render's own error
    throw e.wrapped(opts.dry_run_server ? "submitting (server dry run)" : "submitting");
  }
  join();
  for (const auto& w : warnings) env_.warn(w);
  return result;
}

}  // namespace ktrain::backend
