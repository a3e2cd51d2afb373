// serve.target: lws: a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) for a model served
// across serve.nodes pods: each replica is a group of a leader and nodes - 1 workers,
// created and restarted together. Every pod runs serve.command; LeaderWorkerSet gives
// them LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX. The Service and the
// probes are the leaders'; serve.autoscale scales the groups.

#include <string>
#include <vector>

#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

constexpr const char* kApiVersion = "leaderworkerset.x-k8s.io/v1";

std::vector<ordered_json> render(const detail::RenderContext& ctx) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  const std::string& name = p.name;
  const ordered_json labels = detail::common_labels(p, name, "");
  // The leaders: worker index 0 of each group.
  const ordered_json leaders = {{kLabelRun, name},
                                {"leaderworkerset.sigs.k8s.io/worker-index", "0"}};
  std::vector<ordered_json> out;

  ordered_json lws = ctx.load("leaderworkerset.yaml");
  detail::set_metadata(lws, p, name, labels);
  auto& spec = lws["spec"];
  spec["replicas"] = sv.autoscale ? sv.autoscale->min : sv.replicas.value_or(1);
  spec["startupPolicy"] = "LeaderCreated";
  spec["rolloutStrategy"] = {
      {"type", "RollingUpdate"},
      {"rollingUpdateConfiguration",
       {{"maxSurge", sv.rollout.max_surge}, {"maxUnavailable", sv.rollout.max_unavailable}}}};
  detail::ServePodWiring leader;
  leader.pod_template_hash = false;
  leader.spread = true;
  detail::ServePodWiring worker = leader;
  worker.ports = false;
  worker.probes = false;
  worker.spread = false;
  auto& group = spec["leaderWorkerTemplate"];
  group["size"] = sv.nodes;
  group["restartPolicy"] = "RecreateGroupOnPodRestart";
  group["leaderTemplate"] = detail::serve_pod_template(ctx, labels, leaders, leader);
  group["workerTemplate"] = detail::serve_pod_template(ctx, labels, leaders, worker);
  out.push_back(std::move(lws));
  out.push_back(detail::render_serve_service(ctx, labels, leaders));
  if (sv.autoscale) out.push_back(detail::render_hpa(ctx, labels, kApiVersion, "LeaderWorkerSet"));
  // A drain takes one pod at a time of the whole set (a group restarts as one).
  if (auto pdb = detail::render_pdb(ctx, labels, {{kLabelRun, name}}); !pdb.is_null()) {
    out.push_back(std::move(pdb));
  }
  return out;
}

}  // namespace

extern const ServeTarget kLeaderWorkerSet = {
    "lws",
    {kApiVersion, "LeaderWorkerSet", "leaderworkersets",
     "leaderworkersets.leaderworkerset.x-k8s.io",
     "install LeaderWorkerSet: kubectl apply --server-side -f "
     "https://github.com/kubernetes-sigs/lws/releases/latest/download/manifests.yaml"},
    "serve",
    render};

}  // namespace ktrain::render::targets
