// KubeBackend's services: serve (apply the project's serving objects of its
// serve.target and wait for the target's readiness), scale, and the server's version.

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "backend/kube_backend.h"
#include "base/error.h"
#include "base/text.h"
#include "kube/rollout.h"
#include "kube/run_state.h"
#include "net/http.h"
#include "render/render.h"
#include "render/targets/targets.h"

namespace ktrain::backend {

namespace {

using nlohmann::json;

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

/// "Deployment" -> "deployment", as kubectl names kinds.
/// An InferenceService scales in its own fields: spec.predictor.minReplicas and
/// maxReplicas (KServe makes the autoscaler of them); --replicas N holds both at N.
ScaleResult scale_inference_service(kube::Client& client, const std::string& ns,
                                    const KubeBackend::RunObject& isvc, const ScaleRequest& req) {
  const std::string what = "scaling " + req.name;
  static const json kNone;
  const auto spec = isvc.object.find("spec");
  const json& predictor =
      spec != isvc.object.end() && spec->is_object() && spec->contains("predictor")
          ? (*spec)["predictor"]
          : kNone;
  const int cur_min = predictor.is_object() ? predictor.value("minReplicas", 1) : 1;
  const int cur_max = predictor.is_object() ? predictor.value("maxReplicas", cur_min) : cur_min;
  if (req.replicas && (req.min || req.max)) {
    throw UsageError("scale " + req.name +
                     ": an InferenceService's replicas are its autoscaler's range: give "
                     "--replicas N (min = max = N) or --min/--max, not both");
  }
  if (req.replicas && *req.replicas == 0) {
    throw UsageError(
        "--replicas 0: an InferenceService keeps at least one replica here "
        "('ktrain delete " +
        req.name + "' removes it)");
  }
  const int new_min = req.replicas ? *req.replicas : req.min.value_or(cur_min);
  const int new_max = req.replicas ? *req.replicas : req.max.value_or(cur_max);
  if (new_min > new_max) {
    throw UsageError("--min " + std::to_string(new_min) +
                     " would be more than the InferenceService's maxReplicas " +
                     std::to_string(new_max) + "; give --max too");
  }
  json patch = {{"spec", {{"predictor", {{"minReplicas", new_min}, {"maxReplicas", new_max}}}}}};
  with_context(
      what, [&] { return client.merge_patch(kube::object_path(isvc.type, ns, req.name), patch); });
  ScaleResult out;
  out.changed.push_back(kube::object_ref(isvc.type, req.name) + " scaled (min " +
                        std::to_string(new_min) + ", max " + std::to_string(new_max) + ")");
  return out;
}

}  // namespace

ServeResult KubeBackend::serve(const project::Project& project, const ServeOptions& opts) {
  if (!project.serve) {
    throw UsageError(project.file +
                     ": there is no serve section (use 'ktrain submit' for training)");
  }
  const std::string ns = namespace_for(project);
  const auto& target = render::targets::serve_target(project.serve->target);
  require_api(target.api, "serve.target", target.name);
  render::RenderOptions ro;
  ro.run_id = render::default_run_id(project);
  auto rendered = render::render_project(project, ro);
  for (const auto& w : rendered.warnings) env_.warn(w);
  std::vector<nlohmann::ordered_json> objects;
  std::string workload;  // the object whose readiness is waited for
  const std::string& workload_kind = target.api.kind;
  for (auto& obj : rendered.objects) {
    const auto& labels = obj["metadata"]["labels"];
    if (!labels.is_object() || labels.value(render::kLabelRun, "") != project.name) continue;
    const std::string kind = obj.value("kind", "");
    if (kind != workload_kind && kind != "Service" && kind != "HorizontalPodAutoscaler" &&
        kind != "PodDisruptionBudget")
      continue;
    if (!obj["metadata"].contains("namespace")) obj["metadata"]["namespace"] = ns;
    if (kind == workload_kind) {
      workload = obj["metadata"].value("name", "");
      // The autoscaler's replica count stands (an InferenceService's is its own field).
      if (project.serve->autoscale && kind != "InferenceService") keep_replicas(client_, ns, obj);
    }
    objects.push_back(std::move(obj));
  }
  bool has_budget = false;
  for (const auto& o : objects)
    has_budget = has_budget || o.value("kind", "") == "PodDisruptionBudget";
  ServeResult result;
  result.objects = with_context("serving " + project.name,
                                [&] { return apply_objects(objects, opts.dry_run_server); });
  if (!has_budget && !opts.dry_run_server) {
    // Down to one replica (or serve.disruption: false): a budget left from before would
    // block every drain of its node.
    const auto pdb = kube::resource_type("policy/v1", "PodDisruptionBudget");
    const std::string path = kube::object_path(pdb, ns, project.name);
    with_context("serving " + project.name, [&] {
      auto old = client_.get_if_exists(path);
      const bool ours = old && kube::managed_by_ktrain(*old);
      return ours && client_.remove(path);
    });
  }
  if (!opts.wait || opts.dry_run_server || workload.empty()) return result;

  result.waited = true;
  const auto type = kube::resource_type(target.api.api_version, workload_kind);
  const auto path = kube::object_path(type, ns, workload);
  const auto deadline = env_.clock->steady_now() + opts.timeout;
  std::string last;
  while (true) {
    auto d = client_.get(path);
    auto st = kube::target_ready_state(d);
    if (st.message != last && !st.done && opts.progress) opts.progress(st.message);
    last = st.message;
    if (st.failed) throw Error("serving " + project.name + ": " + st.message);
    if (st.done) {
      result.ready = true;
      if (workload_kind == "Deployment") {
        const auto avail = d["status"].value("availableReplicas", 0);
        result.message = "rolled out, " + std::to_string(avail) + " replica" +
                         (avail == 1 ? "" : "s") + " available";
      } else {
        result.message = st.message;
      }
      return result;
    }
    if (env_.clock->steady_now() >= deadline) {
      result.message = last;
      return result;
    }
    env_.clock->sleep_for(std::chrono::milliseconds(1000));
  }
}

ScaleResult KubeBackend::scale(const ScaleRequest& req) {
  const std::string ns = client_.default_namespace();
  const auto hpa_type = kube::resource_type("autoscaling/v2", "HorizontalPodAutoscaler");
  const std::string what = "scaling " + req.name;

  // The serving targets' objects of that name (any Deployment, as kubectl scale would).
  const auto served = with_context(what, [&] {
    return find_first(
        {{kube::resource_type("apps/v1", "Deployment"), false, false},
         {kube::resource_type("serving.kserve.io/v1beta1", "InferenceService"), true, false},
         {kube::resource_type("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), true, false}},
        ns, req.name);
  });
  if (!served) {
    throw Error(what + ": \"" + req.name + "\" not found in namespace \"" + ns +
                "\": no Deployment, InferenceService or LeaderWorkerSet of that name (pass -n "
                "NAMESPACE to look in another)");
  }
  if (served->type.kind == "InferenceService") {
    return scale_inference_service(client_, ns, *served, req);
  }
  // A Deployment or a LeaderWorkerSet (its groups): the scale subresource, and the HPA
  // whose scaleTargetRef it is.
  const auto& type = served->type;
  const std::string target = kube::object_ref(type, req.name);
  std::optional<json> hpa;
  try {
    client_.list(kube::collection_path(hpa_type, ns), {}, [&](json& h) {
      const auto& ref = h["spec"]["scaleTargetRef"];
      if (!hpa && ref.value("kind", "") == type.kind && ref.value("name", "") == req.name) {
        hpa = std::move(h);
      }
    });
  } catch (const kube::ApiError& e) {
    if (e.http_status() != 404) throw e.wrapped(what);
  }

  ScaleResult out;
  if (req.min || req.max) {
    if (!hpa) {
      throw Error(what + ": --min/--max change the HorizontalPodAutoscaler, and none controls " +
                  ascii_lower(type.kind) + " \"" + req.name +
                  "\" (add serve.autoscale to the project and run 'ktrain serve')");
    }
    const int cur_min = (*hpa)["spec"].value("minReplicas", 1);
    const int cur_max = (*hpa)["spec"].value("maxReplicas", 1);
    const int new_min = req.min.value_or(cur_min);
    const int new_max = req.max.value_or(cur_max);
    if (new_min > new_max) {
      throw UsageError("--min " + std::to_string(new_min) +
                       " would be more than the autoscaler's maximum " + std::to_string(new_max) +
                       "; give --max too");
    }
    json patch = {{"spec", json::object()}};
    if (req.min) patch["spec"]["minReplicas"] = *req.min;
    if (req.max) patch["spec"]["maxReplicas"] = *req.max;
    const std::string hpa_name = (*hpa)["metadata"].value("name", "");
    with_context(what, [&] {
      return client_.merge_patch(kube::object_path(hpa_type, ns, hpa_name), patch);
    });
    out.changed.push_back(kube::object_ref(hpa_type, hpa_name) + " patched (min " +
                          std::to_string(new_min) + ", max " + std::to_string(new_max) + ")");
  }
  if (req.replicas) {
    if (hpa && !req.min && !req.max) {
      out.warnings.push_back(
          "the HorizontalPodAutoscaler \"" + (*hpa)["metadata"].value("name", "") + "\" controls " +
          ascii_lower(type.kind) + " \"" + req.name + "\" (min " +
          std::to_string((*hpa)["spec"].value("minReplicas", 1)) + ", max " +
          std::to_string((*hpa)["spec"].value("maxReplicas", 1)) +
          ") and will change the replicas again; use --min/--max to change its range");
    }
    with_context(what, [&] {
      return client_.merge_patch(kube::object_path(type, ns, req.name, "scale"),
                                 {{"spec", {{"replicas", *req.replicas}}}});
    });
    out.changed.push_back(target + " scaled");
  }
  return out;
}

nlohmann::ordered_json KubeBackend::server_version() {
  // The API server's /version, as `kubectl version` shows it.
  const json v = with_context("asking the API server for its version",
                              [&] { return client_.get("/version"); });
  nlohmann::ordered_json j;
  j["serverVersion"] = nlohmann::ordered_json::parse(v.dump());
  j["server"] = net::redact_url(client_.config().cluster.server);
  return j;
}

}  // namespace ktrain::backend
