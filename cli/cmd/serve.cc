#include "cmd/serve.h"

#include <memory>
#include <ostream>

#include "backend/kube_backend.h"
#include "base/duration.h"
#include "base/error.h"
#include "cmd/build.h"
#include "cmd/project_flags.h"
#include "kube/connection.h"
#include "kube/run_state.h"
#include "render/render.h"
#include "render/targets/targets.h"

namespace ktrain::cmd {

namespace {

using nlohmann::json;

long long num(const json& obj, const char* a, const char* b, long long fallback = 0) {
  auto ia = obj.find(a);
  if (ia == obj.end() || !ia->is_object()) return fallback;
  auto ib = ia->find(b);
  if (ib == ia->end() || !ib->is_number_integer()) return fallback;
  return ib->get<long long>();
}

}  // namespace

RolloutState rollout_state(const json& d) {
  RolloutState s;
  const std::string name = d.contains("metadata") ? d["metadata"].value("name", "") : "";
  const long long generation = num(d, "metadata", "generation");
  const long long observed = num(d, "status", "observedGeneration");
  if (generation > observed) {
    s.message = "Waiting for deployment spec update to be observed...";
    return s;
  }
  if (d.contains("status") && d["status"].contains("conditions")) {
    for (const auto& c : d["status"]["conditions"]) {
      if (c.value("type", "") == "Progressing" &&
          c.value("reason", "") == "ProgressDeadlineExceeded") {
        s.failed = true;
        s.message = "deployment \"" + name + "\" exceeded its progress deadline";
        return s;
      }
    }
  }
  const long long updated = num(d, "status", "updatedReplicas");
  const long long replicas = num(d, "status", "replicas");
  const long long available = num(d, "status", "availableReplicas");
  const bool has_spec_replicas = d.contains("spec") && d["spec"].contains("replicas") &&
                                 d["spec"]["replicas"].is_number_integer();
  const long long want = has_spec_replicas ? d["spec"]["replicas"].get<long long>() : 0;
  const std::string waiting = "Waiting for deployment \"" + name + "\" rollout to finish: ";
  if (has_spec_replicas && updated < want) {
    s.message = waiting + std::to_string(updated) + " out of " + std::to_string(want) +
                " new replicas have been updated...";
  } else if (replicas > updated) {
    s.message =
        waiting + std::to_string(replicas - updated) + " old replicas are pending termination...";
  } else if (available < updated) {
    s.message = waiting + std::to_string(available) + " of " + std::to_string(updated) +
                " updated replicas are available...";
  } else {
    s.done = true;
    s.message = "deployment \"" + name + "\" successfully rolled out";
  }
  return s;
}

namespace {

/// The condition `type` of `obj`'s status, or null.
const json* condition(const json& obj, const std::string& type) {
  if (!obj.contains("status") || !obj["status"].is_object()) return nullptr;
  const auto& st = obj["status"];
  if (!st.contains("conditions") || !st["conditions"].is_array()) return nullptr;
  for (const auto& c : st["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string said(const json& c) {
  std::string out = c.value("reason", "");
  const std::string msg = c.value("message", "");
  if (!msg.empty()) out += (out.empty() ? "" : ": ") + msg;
  return out;
}

}  // namespace

RolloutState target_ready_state(const json& obj) {
  const std::string kind = obj.value("kind", "");
  const std::string name = obj.contains("metadata") ? obj["metadata"].value("name", "") : "";
  RolloutState s;
  if (kind == "InferenceService") {
    const json* ready = condition(obj, "Ready");
    if (ready && ready->value("status", "") == "True") {
      s.done = true;
      s.message = "inferenceservice \"" + name + "\" is ready";
      if (obj["status"].contains("url")) s.message += " at " + obj["status"].value("url", "");
      return s;
    }
    s.message = "Waiting for inferenceservice \"" + name + "\" to be ready";
    // The predictor's own condition says why, when KServe has one.
    const json* pred = condition(obj, "PredictorReady");
    const json* why = pred && pred->value("status", "") == "False" ? pred : ready;
    if (why && !said(*why).empty()) s.message += ": " + said(*why);
    // KServe's words for pods that will not come up by themselves.
    if (obj.contains("status") && obj["status"].contains("modelStatus")) {
      const auto& ms = obj["status"]["modelStatus"];
      const std::string reason =
          ms.contains("lastFailureInfo") ? ms["lastFailureInfo"].value("reason", "") : "";
      if (ms.value("transitionStatus", "") == "BlockedByFailedLoad" ||
          reason == "ModelLoadFailed") {
        s.failed = true;
        s.message =
            "inferenceservice \"" + name + "\" failed to load its model" +
            (ms.contains("lastFailureInfo") ? ": " + ms["lastFailureInfo"].value("message", reason)
                                            : "");
      }
    }
    return s;
  }
  if (kind == "LeaderWorkerSet") {
    const long long want = obj.contains("spec") ? obj["spec"].value("replicas", 1LL) : 1;
    const long long ready = obj.contains("status") ? obj["status"].value("readyReplicas", 0LL) : 0;
    const json* available = condition(obj, "Available");
    if (available && available->value("status", "") == "True" && ready >= want) {
      s.done = true;
      s.message = "leaderworkerset \"" + name + "\": " + std::to_string(ready) + " of " +
                  std::to_string(want) + " groups ready";
      return s;
    }
    s.message = "Waiting for leaderworkerset \"" + name + "\": " + std::to_string(ready) + " of " +
                std::to_string(want) + " groups ready";
    const json* progressing = condition(obj, "Progressing");
    if (progressing && !said(*progressing).empty()) s.message += " (" + said(*progressing) + ")";
    return s;
  }
  return rollout_state(obj);
}

namespace {

/// A Deployment that an autoscaler drives is created with its minimum replicas and
/// then left to it: when it exists, the apply carries the replicas it has now, so
/// that serving again changes nothing the HPA decided.
void keep_replicas(kube::Client& client, const std::string& ns, nlohmann::ordered_json& dep) {
  const auto type = kube::resource_type(dep.value("apiVersion", ""), dep.value("kind", ""));
  try {
    const auto current = client.get(kube::object_path(type, ns, dep["metadata"].value("name", "")));
    if (current["spec"].contains("replicas")) dep["spec"]["replicas"] = current["spec"]["replicas"];
  } catch (const kube::ApiError& e) {
    if (e.http_status() != 404) throw;  // not there yet: created with the minimum
  }
}

}  // namespace

int run_serve(Env& env, kube::Client& client, const project::Project& project,
              const ServeRun& opts) {
  if (!project.serve) {
    throw UsageError(project.file +
                     ": there is no serve section (use 'ktrain submit' for "
                     "training)");
  }
  backend::KubeBackend kb(client, env);
  const std::string ns = kb.namespace_for(project);
  const auto& target = render::targets::serve_target(project.serve->target);
  kb.require_api(target.api, "serve.target", target.name);
  render::RenderOptions ro;
  ro.run_id = render::default_run_id(project);
  auto rendered = render::render_project(project, ro);
  for (const auto& w : rendered.warnings) env.warn(w);
  std::vector<nlohmann::ordered_json> objects;
  std::string deployment;  // the workload whose readiness is waited for
  std::string workload_api = target.api.api_version, workload_kind = target.api.kind;
  for (auto& obj : rendered.objects) {
    const auto& labels = obj["metadata"]["labels"];
    if (!labels.is_object() || labels.value(render::kLabelRun, "") != project.name) continue;
    const std::string kind = obj.value("kind", "");
    if (kind != workload_kind && kind != "Service" && kind != "HorizontalPodAutoscaler" &&
        kind != "PodDisruptionBudget")
      continue;
    if (!obj["metadata"].contains("namespace")) obj["metadata"]["namespace"] = ns;
    if (kind == workload_kind) {
      deployment = obj["metadata"].value("name", "");
      // The autoscaler's replica count stands (an InferenceService's is its own field).
      if (project.serve->autoscale && kind != "InferenceService") keep_replicas(client, ns, obj);
    }
    objects.push_back(std::move(obj));
  }
  bool has_budget = false;
  for (const auto& o : objects)
    has_budget = has_budget || o.value("kind", "") == "PodDisruptionBudget";
  auto refs = with_context("serving " + project.name,
                           [&] { return kb.apply_objects(objects, opts.dry_run_server); });
  if (!has_budget && !opts.dry_run_server) {
    // Down to one replica (or serve.disruption: false): a budget left from before would
    // block every drain of its node.
    const auto pdb = kube::resource_type("policy/v1", "PodDisruptionBudget");
    const std::string path = kube::object_path(pdb, ns, project.name);
    with_context("serving " + project.name, [&] {
      auto old = client.get_if_exists(path);
      const bool ours = old && kube::managed_by_ktrain(*old);
      return ours && client.remove(path);
    });
  }
  if (env.global.output == "name") {
    for (const auto& r : refs) *env.out << r << "\n";
  }
  if (!opts.wait || opts.dry_run_server || deployment.empty()) {
    if (env.global.output != "name") *env.out << project.name << "\n";
    return exit_code::kOk;
  }

  const auto type = kube::resource_type(workload_api, workload_kind);
  const auto path = kube::object_path(type, ns, deployment);
  const auto deadline = env.clock->steady_now() + opts.timeout;
  std::string last;
  while (true) {
    auto d = client.get(path);
    auto st = target_ready_state(d);
    if (st.message != last && !env.global.quiet && !st.done) *env.err << st.message << "\n";
    last = st.message;
    if (st.failed) throw Error("serving " + project.name + ": " + st.message);
    if (st.done) {
      if (env.global.output != "name") {
        if (workload_kind == "Deployment") {
          const auto avail = d["status"].value("availableReplicas", 0);
          *env.out << project.name << ": rolled out, " << avail << " replica"
                   << (avail == 1 ? "" : "s") << " available\n";
        } else {
          *env.out << project.name << ": " << st.message << "\n";
        }
      }
      return exit_code::kOk;
    }
    if (env.clock->steady_now() >= deadline) {
      *env.err << "ktrain: error: serving " << project.name << ": timed out after "
               << format_duration(opts.timeout.count()) << " waiting for the rollout (" << last
               << ")\n";
      return exit_code::kTimeout;
    }
    env.clock->sleep_for(std::chrono::milliseconds(1000));
  }
}

namespace {

struct ServeOptions {
  ProjectFlags project;
  std::string timeout = "10m";
  bool no_wait = false;
  std::string dry_run;

  ServeRun validate() const {
    ServeRun r;
    r.wait = !no_wait;
    auto secs = parse_duration_seconds(timeout);
    if (!secs || *secs <= 0) {
      throw UsageError("--timeout " + timeout + ": expected a duration such as 90s, 10m or 1h");
    }
    r.timeout = std::chrono::seconds(*secs);
    if (!dry_run.empty() && dry_run != "server" && dry_run != "none") {
      throw UsageError("--dry-run " + dry_run +
                       ": serve supports --dry-run=server (use "
                       "'ktrain render' to see the objects)");
    }
    r.dry_run_server = dry_run == "server";
    const auto& o = output_format;
    if (!o.empty() && o != "name") throw UsageError("-o " + o + ": serve prints name");
    return r;
  }
  std::string output_format;
};

}  // namespace

void add_serve_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ServeOptions>();
  auto* sub = app.add_subcommand(
      "serve",
      "Apply the project's serve section (Deployment, Service, HPA; or serve.target's "
      "InferenceService or LeaderWorkerSet) and wait until it is ready");
  opts->project.add_to(*sub);
  sub->add_option("--timeout", opts->timeout,
                  "Give up waiting for the rollout after this long (exit 124)")
      ->capture_default_str();
  sub->add_flag("--no-wait", opts->no_wait, "Apply and return without waiting for the rollout");
  sub->add_option("--dry-run", opts->dry_run, "server: validate on the server, change nothing")
      ->type_name("server|none");
  sub->callback([opts, &env, &result] {
    opts->output_format = env.global.output;
    const ServeRun r = opts->validate();
    project::Project project = opts->project.load(env);
    kube::Connection conn(env);
    fill_cuda_from_image(env, project, {});
    result.status = run_serve(env, conn.client(), project, r);
  });
}

}  // namespace ktrain::cmd
