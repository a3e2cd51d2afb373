#include "cmd/scale.h"

#include <memory>
#include <ostream>

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

int run_scale(Env& env, kube::Client& client, const ScaleRequest& req) {
  validate_scale(req);
  const std::string ns = client.default_namespace();
  const auto dep_type = kube::resource_type("apps/v1", "Deployment");
  const auto hpa_type = kube::resource_type("autoscaling/v2", "HorizontalPodAutoscaler");
  const std::string what = "scaling " + req.name;

  if (!client.get_if_exists(kube::object_path(dep_type, ns, req.name))) {
    throw Error(what + ": deployment \"" + req.name + "\" not found in namespace \"" + ns +
                "\" (pass -n NAMESPACE to look in another)");
  }
  // The HPA (if any) whose scaleTargetRef is this Deployment.
  std::optional<nlohmann::json> hpa;
  try {
    client.list(kube::collection_path(hpa_type, ns), {}, [&](nlohmann::json& h) {
      const auto& ref = h["spec"]["scaleTargetRef"];
      if (!hpa && ref.value("kind", "") == "Deployment" && ref.value("name", "") == req.name) {
        hpa = std::move(h);
      }
    });
  } catch (const kube::ApiError& e) {
    if (e.http_status() != 404) throw e.wrapped(what);
  }

  if (req.min || req.max) {
    if (!hpa) {
      throw Error(what +
                  ": --min/--max change the HorizontalPodAutoscaler, and none controls "
                  "deployment \"" +
                  req.name +
                  "\" (add serve.autoscale to the project and run "
                  "'ktrain serve')");
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
               "\" controls deployment \"" + req.name + "\" (min " +
               std::to_string((*hpa)["spec"].value("minReplicas", 1)) + ", max " +
               std::to_string((*hpa)["spec"].value("maxReplicas", 1)) +
               ") and will change the replicas again; use --min/--max to change its range");
    }
    with_context(what, [&] {
      return client.merge_patch(kube::object_path(dep_type, ns, req.name, "scale"),
                                {{"spec", {{"replicas", *req.replicas}}}});
    });
    *env.out << kube::object_ref(dep_type, req.name) << " scaled\n";
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
  sub->add_option("NAME", f->name, "The serve name (the Deployment)")->required();
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
