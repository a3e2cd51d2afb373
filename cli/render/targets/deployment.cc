// serve.target: deployment (the default): a Deployment, a ClusterIP Service, with
// serve.autoscale a HorizontalPodAutoscaler, and with 2+ replicas a PodDisruptionBudget.

#include <string>
#include <vector>

#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

std::vector<ordered_json> render(const detail::RenderContext& ctx) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  const std::string& name = p.name;
  const ordered_json labels = detail::common_labels(p, name, "");
  const ordered_json selector = {{kLabelRun, name}};
  std::vector<ordered_json> out;

  ordered_json dep = ctx.load("deployment.yaml");
  detail::set_metadata(dep, p, name, labels);
  auto& spec = dep["spec"];
  // With an autoscaler, created with its minimum (then left to it: see run_serve).
  spec["replicas"] = sv.autoscale ? sv.autoscale->min : sv.replicas.value_or(1);
  spec["selector"] = {{"matchLabels", selector}};
  spec["strategy"] = {
      {"type", "RollingUpdate"},
      {"rollingUpdate",
       {{"maxSurge", sv.rollout.max_surge}, {"maxUnavailable", sv.rollout.max_unavailable}}}};
  spec["template"] = detail::serve_pod_template(ctx, labels, selector, {});
  out.push_back(std::move(dep));
  out.push_back(detail::render_serve_service(ctx, labels, selector));
  if (sv.autoscale) out.push_back(detail::render_hpa(ctx, labels, "apps/v1", "Deployment"));

  if (auto pdb = detail::render_pdb(ctx, labels, selector); !pdb.is_null()) {
    out.push_back(std::move(pdb));
  }
  return out;
}

}  // namespace

extern const ServeTarget kDeployment = {
    "deployment", {"apps/v1", "Deployment", "deployments", "", ""}, "serve", render};

}  // namespace ktrain::render::targets
