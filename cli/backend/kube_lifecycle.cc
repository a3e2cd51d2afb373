// KubeBackend's delete, stop and resume: a run's objects removed by label, its Job
// (or operator's object) suspended and let go again.
#include <exception>
#include <iterator>
#include <thread>

#include "backend/kube_backend.h"
#include "backend/kube_shared.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/run_state.h"
#include "render/render.h"

namespace ktrain::backend {

using nlohmann::json;
using namespace detail;

void KubeBackend::remove(const std::string& run) {
  const std::string ns = client_.default_namespace();
  kube::ListOptions lo;
  lo.label_selector = std::string(kRunLabel) + "=" + run;
  lo.drop_keys = {"managedFields", "spec", "status", "data", "annotations"};
  // The kinds are listed at once (one thread each: every list waits on the server).
  const size_t kinds = std::size(kOwnedKinds);
  std::vector<std::vector<net::Request>> found(kinds);
  std::vector<std::exception_ptr> errors(kinds);
  std::vector<std::thread> listers;
  for (size_t i = 0; i < kinds; ++i) {
    listers.emplace_back([&, i] {
      const auto& k = kOwnedKinds[i];
      const auto type = kube::resource_type(k.api_version, k.kind);
      try {
        client_.list(kube::collection_path(type, ns), lo, [&](json& obj) {
          found[i].push_back(client_.delete_request(
              kube::object_path(type, ns, obj["metadata"].value("name", ""))));
        });
      } catch (const kube::ApiError& e) {
        if (k.optional && e.http_status() == 404) return;  // the CRD is not installed
        // An operator's kind that the user may not list: none of theirs to delete (a
        // Role made before the targets, or for plain Jobs only, still deletes runs).
        if (k.optional && e.http_status() == 403 && i >= kFirstOperatorKind) return;
        errors[i] = std::make_exception_ptr(e.wrapped("deleting run \"" + run + "\""));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : listers) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<net::Request> deletes;
  for (auto& f : found) {
    for (auto& r : f) deletes.push_back(std::move(r));
  }
  if (deletes.empty()) throw run_not_found(run, ns);
  // The rendezvous Secret goes by its name: Secrets are never listed (nor read), so
  // that a user needs no right to read other runs' Secrets. (One left without its
  // run goes with its owner, the run's Service, by garbage collection.)
  static_assert(std::string_view(kOwnedKinds[0].kind) == "Job");
  if (!found[0].empty()) {
    deletes.push_back(client_.delete_request(
        kube::object_path(kube::resource_type("v1", "Secret"), ns, run + "-rdzv")));
  }
  auto resps = client_.send_all(deletes);
  for (size_t i = 0; i < resps.size(); ++i) {
    if (resps[i].failure == net::TransportFailure::kNone && resps[i].status == 404) continue;
    with_context("deleting run \"" + run + "\"", [&] { client_.check(deletes[i], resps[i]); });
  }
}

namespace {

/// The state of a run's Job or operator's object.
RunState state_of(const KubeBackend::RunObject& run) {
  return run.type.kind == "Job" ? kube::summarize_job(run.object).state
                                : kube::summarize_operator(run.object).state;
}

/// Where a run's object says that it is suspended: a Job's, JobSet's and TrainJob's
/// spec.suspend, the Kubeflow operators' spec.runPolicy.suspend.
json suspend_patch(const std::string& kind, bool suspend) {
  if (kind == "PyTorchJob" || kind == "TFJob" || kind == "MPIJob") {
    return {{"runPolicy", {{"suspend", suspend}}}};
  }
  return {{"suspend", suspend}};
}

}  // namespace

KubeBackend::RunObject KubeBackend::run_to_change(const std::string& ns, const std::string& run,
                                                  const std::string& verb) {
  auto found = find_run(ns, run);
  if (!found) throw run_not_found(run, ns);
  if (is_service_kind(found->type.kind)) {
    throw Error("\"" + run + "\" is a service: 'ktrain scale " + run +
                " --replicas 0' takes its replicas away, 'ktrain serve' brings them back");
  }
  const auto state = state_of(*found);
  if (state == RunState::kSucceeded || state == RunState::kFailed) {
    throw Error("run \"" + run + "\" has ended (" + to_string(state) + "): nothing to " + verb +
                (verb == "resume" ? "; 'ktrain submit' starts a new run" : ""));
  }
  return std::move(*found);
}

static bool is_queued(const json& job) {
  const auto& labels = job["metadata"]["labels"];
  return labels.is_object() && labels.value(render::kLabelQueued, "") == "true";
}

bool KubeBackend::stop(const std::string& run) {
  const std::string ns = client_.default_namespace();
  const RunObject found = run_to_change(ns, run, "stop");
  if (state_of(found) == RunState::kStopped) return false;
  // A run waiting for its place in a sweep is stopped too: it no longer waits.
  // Suspending the Job makes the Job controller delete its pods (each gets its grace
  // period: the launcher passes SIGTERM on to the workers); the Job, its status, the
  // Service and the Secret stay. The label marks it as stopped rather than queued. The
  // operators (Kubeflow, JobSet, Trainer) do the same with their suspended objects.
  json patch = {
      {"metadata",
       {{"labels", {{kube::kLabelStopped, "true"}}},
        {"annotations", {{kube::kAnnotationStoppedAt, format_rfc3339(env_.clock->now())}}}}},
      {"spec", suspend_patch(found.type.kind, true)}};
  with_context("stopping run \"" + run + "\"",
               [&] { client_.merge_patch(kube::object_path(found.type, ns, run), patch); });
  return true;
}

bool KubeBackend::resume(const std::string& run) {
  const std::string ns = client_.default_namespace();
  const RunObject found = run_to_change(ns, run, "resume");
  const json& job = found.object;
  // Stopped by `ktrain stop`, or waiting for its place in a sweep.
  if (state_of(found) != RunState::kStopped && !is_queued(job)) return false;
  json patch = {{"metadata",
                 {{"labels", {{kube::kLabelStopped, nullptr}, {render::kLabelQueued, nullptr}}},
                  {"annotations", {{kube::kAnnotationStoppedAt, nullptr}}}}},
                {"spec", suspend_patch(found.type.kind, false)}};
  // A waiting run of a Kueue queue: it gets its queue label and stays suspended; Kueue
  // lets it in (unsuspends it) when the queue has room.
  const auto& annotations = job["metadata"]["annotations"];
  const std::string queue =
      annotations.is_object() ? annotations.value(render::kAnnotationQueue, "") : "";
  if (!queue.empty()) {
    patch["metadata"]["labels"][render::kLabelKueueQueue] = queue;
    patch["metadata"]["annotations"][render::kAnnotationQueue] = nullptr;
    patch.erase("spec");
  }
  with_context("resuming run \"" + run + "\"",
               [&] { client_.merge_patch(kube::object_path(found.type, ns, run), patch); });
  return true;
}

}  // namespace ktrain::backend
