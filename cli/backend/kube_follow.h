#pragma once
// Following a run's logs on the cluster, exactly once. Pods are found by watching the
// run's label (not a list taken once), so ranks that start late are attached to when
// their container starts, and a rank whose pod is replaced after a failure is followed
// into its new pod. When a stream drops, it is reopened with sinceTime = the second of
// the last line seen (the API server's precision) and the overlap is dropped by
// timestamp, so that no line is lost and none is printed twice.

#include <string>

#include "backend/backend.h"
#include "backend/log_dedup.h"
#include "base/env.h"
#include "kube/client.h"

namespace ktrain::backend {

/// Follows the logs of every pod of `run` in namespace `ns` until the run ends (its
/// `workload`, the Job or the operator's object of that name, completes or fails and
/// every stream has ended; a Deployment's service does not end), `opts.cancelled` says stop, or
/// `sink` returns false. Lines go to `sink` one at a time, whole, in order within each
/// pod; notices (restarts, deleted pods) go there too with LogLine::notice set.
/// Throws Error when the run does not exist, for API errors (401, 403), and (exit 3)
/// when the API server stays unreachable.
void follow_kube_logs(kube::Client& client, const Env& env, const std::string& ns,
                      const std::string& run, const kube::ResourceType& workload,
                      const LogOptions& opts, const LogSink& sink);

}  // namespace ktrain::backend
