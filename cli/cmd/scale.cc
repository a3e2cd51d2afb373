#include "cmd/scale.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "base/error.h"
#include "kube/connection.h"

namespace ktrain::cmd {

void validate_scale(const ScaleRequest& req) {
  if (req.name.empty()) throw UsageError("scale: NAME is required");
  if (!req.replicas && !req.min && !req.max) {
    throw UsageError("scale " + req.name +
                     ": give --replicas N, or --min/--max for the autoscaler");
  }
  if (req.replicas && *req.replicas < 0) {
    throw UsageError("--replicas " + std::to_string(*req.replicas) + ": must be 0 or more");
  }
  if (req.min && *req.min < 1) {
    throw UsageError("--min " + std::to_string(*req.min) + ": must be 1 or more");
  }
  if (req.max && *req.max < 1) {
    throw UsageError("--max " + std::to_string(*req.max) + ": must be 1 or more");
  }
  if (req.min && req.max && *req.min > *req.max) {
    throw UsageError("--min " + std::to_string(*req.min) + " is more than --max " +
                     std::to_string(*req.max));
  }
}

namespace {

/// What a served model is on the cluster: a Deployment (serve.target deployment), a
/// KServe InferenceService or a LeaderWorkerSet; with the object as read.
struct Served {
  kube::ResourceType type;
  nlohmann::json object;
};

/// The served model named `name`, looked for as each serving target's object at once;
/// kinds whose CRD is missing (404) or that the user may not read (403) are passed over.
std::optional<Served> find_served(kube::Client& client, const std::string& ns,
                                  const std::string& name) {
  const std::vector<kube::ResourceType> types = {
      kube::resource_type("apps/v1", "Deployment"),
      kube::resource_type("serving.kserve.io/v1beta1", "InferenceService"),
      kube::resource_type("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")};
  std::vector<net::Request> reqs;
  for (const auto& t : types) reqs.push_back(client.request("GET", kube::object_path(t, ns, name)));
  auto resps = client.send_all(reqs);
  for (size_t i = 0; i < resps.size(); ++i) {
    const auto& r = resps[i];
    if (r.failure == net::TransportFailure::kNone &&
        (r.status == 404 || (i > 0 && r.status == 403))) {
      continue;
    }
    client.check(reqs[i], r);
    auto obj = nlohmann::json::parse(r.body, nullptr, false);
    if (obj.is_object()) return Served{types[i], std::move(obj)};
  }
  return std::nullopt;
}

/// An InferenceService scales in its own fields: spec.predictor.minReplicas and
/// maxReplicas (KServe makes the autoscaler of them); --replicas N holds both at N.
int scale_inference_service(Env& env, kube::Client& client, const std::string& ns,
                            const Served& isvc, const ScaleRequest& req) {
  const std::string what = "scaling " + req.name;
  const auto& predictor = isvc.object["spec"]["predictor"];
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
  const int new_max = req.replicas ? *req.replicas : req.max.value_or(std::max(cur_max, new_min));
  if (new_min > new_max) {
    throw UsageError("--min " + std::to_string(new_min) +
                     " would be more than the InferenceService's maxReplicas " +
                     std::to_string(new_max) + "; give --max too");
  }
  nlohmann::json patch = {
      {"spec", {{"predictor", {{"minReplicas", new_min}, {"maxReplicas", new_max}}}}}};
  with_context(
      what, [&] { return client.merge_patch(kube::object_path(isvc.type, ns, req.name), patch); });
  *env.out << kube::object_ref(isvc.type, req.name) << " scaled (min " << new_min << ", max "
           << new_max << ")\n";
  return exit_code::kOk;
}

/// "Deployment" -> "deployment", as kubectl names kinds.
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

int run_scale(Env& env, kube::Client& client, const ScaleRequest& req) {
  validate_scale(req);
  const std::string ns = client.default_namespace();
  const auto hpa_type = kube::resource_type("autoscaling/v2", "HorizontalPodAutoscaler");
  const std::string what = "scaling " + req.name;

  const auto served = with_context(what, [&] { return find_served(client, ns, req.name); });
  if (!served) {
    throw Error(what + ": \"" + req.name + "\" not found in namespace \"" + ns +
                "\": no Deployment, InferenceService or LeaderWorkerSet of that name (pass -n "
                "NAMESPACE to look in another)");
  }
  if (served->type.kind == "InferenceService") {
    return scale_inference_service(env, client, ns, *served, req);
  }
  // A Deployment or a LeaderWorkerSet (its groups): the scale subresource, and the HPA
  // whose scaleTargetRef it is.
  const auto& type = served->type;
  const std::string target = kube::object_ref(type, req.name);
  std::optional<nlohmann::json> hpa;
  try {
    client.list(kube::collection_path(hpa_type, ns), {}, [&](nlohmann::json& h) {
      const auto& ref = h["spec"]["scaleTargetRef"];
      if (!hpa && ref.value("kind", "") == type.kind && ref.value("name", "") == req.name) {
        hpa = std::move(h);
      }
    });
  } catch (const kube::ApiError& e) {
    if (e.http_status() != 404) throw e.wrapped(what);
  }

  if (req.min || req.max) {
    if (!hpa) {
      throw Error(what + ": --min/--max change the HorizontalPodAutoscaler, and none controls " +
                  target + " (add serve.autoscale to the project and run 'ktrain serve')");
    }
    const int cur_min = (*hpa)["spec"].value("minReplicas", 1);
    const int cur_max = (*hpa)["spec"].value("maxReplicas", 1);
    const int new_min = req.min.value_or(cur_min);
    const int new_max = req.max.value_or(cur_max);
    if (new_min > new_max) {
      throw UsageError("--min " + std::to_string(new_min) +
                       " would be more than the autoscaler's "
                       "maximum " +
                       std::to_string(new_max) + "; give --max too");
    }
    nlohmann::json patch = {{"spec", nlohmann::json::object()}};
    if (req.min) patch["spec"]["minReplicas"] = *req.min;
    if (req.max) patch["spec"]["maxReplicas"] = *req.max;
    const std::string hpa_name = (*hpa)["metadata"].value("name", "");
    with_context(
        what, [&] { return client.merge_patch(kube::object_path(hpa_type, ns, hpa_name), patch); });
    *env.out << kube::object_ref(hpa_type, hpa_name) << " patched (min " << new_min << ", max "
             << new_max << ")\n";
  }
  if (req.replicas) {
    if (hpa && !req.min && !req.max) {
      env.warn("the HorizontalPodAutoscaler \"" + (*hpa)["metadata"].value("name", "") +
               "\" controls " + lower(type.kind) + " \"" + req.name + "\" (min " +
               std::to_string((*hpa)["spec"].value("minReplicas", 1)) + ", max " +
               std::to_string((*hpa)["spec"].value("maxReplicas", 1)) +
               ") and will change the replicas again; use --min/--max to change its range");
    }
    with_context(what, [&] {
      return client.merge_patch(kube::object_path(type, ns, req.name, "scale"),
                                {{"spec", {{"replicas", *req.replicas}}}});
    });
    *env.out << target << " scaled\n";
  }
  return exit_code::kOk;
}

void add_scale_command(CLI::App& app, Env& env, CommandResult& result) {
  struct Flags {
    std::string name;
    int replicas = -1, min = -1, max = -1;
  };
  auto f = std::make_shared<Flags>();
  auto* sub =
      app.add_subcommand("scale", "Set a served model's replicas, or its autoscaler's --min/--max");
  sub->add_option("NAME", f->name,
                  "The serve name (its Deployment, InferenceService or LeaderWorkerSet)")
      ->required();
  auto* rep = sub->add_option("--replicas", f->replicas, "Replicas, through the scale subresource");
  auto* mn = sub->add_option("--min", f->min, "The autoscaler's minimum replicas");
  auto* mx = sub->add_option("--max", f->max, "The autoscaler's maximum replicas");
  sub->callback([f, rep, mn, mx, &env, &result] {
    ScaleRequest req;
    req.name = f->name;
    if (rep->count()) req.replicas = f->replicas;
    if (mn->count()) req.min = f->min;
    if (mx->count()) req.max = f->max;
    validate_scale(req);
    kube::Connection conn(env);
    result.status = run_scale(env, conn.client(), req);
  });
}

}  // namespace ktrain::cmd
