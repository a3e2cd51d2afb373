#include "cmd/pod_target.h"

#include <algorithm>

#include "backend/kube_backend.h"
#include "backend/local_backend.h"
#include "base/error.h"
#include "kube/run_state.h"

namespace ktrain::cmd {

void PodChoice::add_to(CLI::App& app) {
  app.add_option("--rank", rank, "The node that runs this worker rank")->type_name("N");
  app.add_option("--node", node, "This node (pod) of the run (default 0)")->type_name("N");
}

void require_cluster_run(Env& env, const TargetFlags& target, const std::string& run,
                         const std::string& verb) {
  const bool local_run = !run.empty() && (env.var("XDG_STATE_HOME") || env.var("HOME")) &&
                         backend::LocalBackend(env, backend::LocalPrograms{}).has_run(run);
  auto l = env.var("KTRAIN_LOCAL");
  if (target.local || local_run || (l && *l == "1")) {
    throw UsageError(verb +
                     " works on the pods of a cluster run; a local run's processes run on "
                     "this machine (ktrain status --local " +
                     (run.empty() ? std::string("RUN") : run) + " shows them)");
  }
}

PodTarget resolve_pod(Env& env, kube::Client& client, const std::string& run,
                      const PodChoice& choice) {
  if (choice.rank < -1 || choice.node < -1) {
    throw UsageError("--rank and --node take a number >= 0");
  }
  if (choice.rank >= 0 && choice.node >= 0) {
    throw UsageError("--rank and --node cannot be used together");
  }
  backend::KubeBackend be(client, env);
  const RunStatus st = be.status(run);
  const bool service = st.summary.kind == "serve";
  int node = std::max(choice.node, 0);
  if (choice.rank >= 0) {
    if (service)
      throw UsageError("--rank names a worker of a training run; " + run + " is a service");
    node = choice.rank / std::max(1, st.summary.gpus);
  }
  const RankStatus* found = nullptr;
  if (service && choice.node < 0) {
    for (const auto& r : st.ranks) {
      if (r.phase == "Running") {
        found = &r;
        break;
      }
    }
    if (!found && !st.ranks.empty()) found = &st.ranks.front();
  } else {
    for (const auto& r : st.ranks) {
      if (r.index == node && !r.pod.empty()) found = &r;  // the newest attempt is last
    }
  }
  if (!found) {
    if (st.ranks.empty()) {
      throw Error(run + " has no pods now (" + to_string(st.summary.state) + "): ktrain status " +
                  run + " says why");
    }
    throw Error(run + " has no node " + std::to_string(node) + " (it has " +
                std::to_string(st.summary.nodes) + (st.summary.nodes == 1 ? " node" : " nodes") +
                (choice.rank >= 0
                     ? ", " + std::to_string(std::max(1, st.summary.gpus)) + " ranks per node"
                     : std::string()) +
                ")");
  }
  PodTarget t;
  t.ns = client.default_namespace();
  t.pod = found->pod;
  t.node = found->index;
  if (found->phase != "Running") {
    std::string why = found->reason.empty() ? "" : " (" + found->reason + ")";
    throw Error("pod " + t.pod + " (node " + std::to_string(t.node) + " of " + run + ") is " +
                found->phase + why + ", not running: ktrain status " + run + " says more");
  }
  const auto pod = client.get(kube::object_path(kube::resource_type("v1", "Pod"), t.ns, t.pod));
  t.container = kube::log_container(pod);
  // A service's pods (and others without the annotation) name their container otherwise:
  // then the first one, as kubectl picks it.
  bool present = false;
  std::string first;
  if (pod.contains("spec") && pod["spec"].contains("containers")) {
    for (const auto& c : pod["spec"]["containers"]) {
      const std::string name = c.value("name", "");
      if (first.empty()) first = name;
      if (name == t.container) present = true;
    }
  }
  if (!present && !first.empty()) t.container = first;
  return t;
}

}  // namespace ktrain::cmd
