#pragma once
// `ktrain diff`: what applying the project would change on the cluster. Each rendered
// object is applied with a server-side dry run (the API server's defaulting, admission
// and merge with what is there, nothing kept) and compared with the live object, as
// `kubectl diff` does; `render --dry-run=server` uses the same dry run to check the
// objects against the cluster's admission.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "cmd/command.h"
#include "kube/client.h"

namespace ktrain::cmd {

/// A unified diff (3 lines of context) of `before` and `after`, split in lines, under
/// the headers "--- from" and "+++ to"; "" when they are the same.
std::string unified_diff(const std::vector<std::string>& before,
                         const std::vector<std::string>& after, const std::string& from,
                         const std::string& to);

/// An object as diff compares it: without what the server keeps for itself
/// (managedFields, resourceVersion, generation, uid, creationTimestamp) and without
/// status; a Secret's data values masked.
nlohmann::json comparable(nlohmann::json obj);

/// Applies each of `objects` with a server-side dry run; nothing is kept. Throws Error
/// (exit 2) naming the object and the server's words when the server refuses one.
/// Returns the objects as the server would make them.
std::vector<nlohmann::json> server_dry_run(kube::Client& client,
                                           const std::vector<nlohmann::ordered_json>& objects);

/// Registers `ktrain diff`.
void add_diff_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
