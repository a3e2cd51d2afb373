#pragma once
// Which pod a verb that goes into a running job (exec, port-forward, dev) works on: a
// node of a run, or the rank of a worker, resolved through the run's status.

#include <string>

#include "base/env.h"
#include "cmd/run_common.h"
#include "kube/client.h"

namespace ktrain::cmd {

/// --rank N / --node N, as exec and port-forward take them.
struct PodChoice {
  int rank = -1;  ///< a worker rank: the node that runs it (rank / processes per node)
  int node = -1;  ///< a node (pod) index
  /// Adds --rank and --node to `app`.
  void add_to(CLI::App& app);
};

/// A running pod and the container to use.
struct PodTarget {
  std::string ns;
  std::string pod;
  std::string container;
  int node = 0;
};

/// Throws UsageError when `run` is a local run (or --local was given): `verb` works on
/// a cluster run's pods.
void require_cluster_run(Env& env, const TargetFlags& target, const std::string& run,
                         const std::string& verb);

/// The pod of `run` that `choice` names (node 0 by default; for a service, its first
/// running replica), which must be running. Throws Error (exit 1) naming the run's pods
/// when there is no such node, and why the pod is not running when it is not.
PodTarget resolve_pod(Env& env, kube::Client& client, const std::string& run,
                      const PodChoice& choice);

}  // namespace ktrain::cmd
