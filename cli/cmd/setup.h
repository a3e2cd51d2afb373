#pragma once
// `ktrain setup NAMESPACE`: a team's namespace, ready for ktrain, in one command (for a
// cluster admin): the Namespace, a ResourceQuota, a LimitRange, Roles with exactly the
// rights ktrain's verbs use (and a read-only one) and their bindings, NetworkPolicies,
// PriorityClasses, and a Kueue LocalQueue. Applied with server-side apply, so that it
// can be run again. `ktrain setup --check NAMESPACE` tells a user which of the rights
// ktrain uses they lack there (SelfSubjectAccessReview).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cmd/command.h"

namespace ktrain::cmd {

/// One rule of the Role that ktrain's verbs need: `verbs` on `resource` (with
/// `subresource`, e.g. pods/log) of API group `group` ("" = core).
struct AccessRule {
  std::string group;
  std::string resource;
  std::string subresource;
  std::vector<std::string> verbs;
  std::string why;  ///< which verbs use it, for --check
};

/// What the Role "ktrain" grants: every right that submit, list, status, logs, stop,
/// resume, delete, serve and scale use, and no more. Secrets: create and delete only
/// (a run's rendezvous Secret), never get, list, watch or patch.
const std::vector<AccessRule>& ktrain_access_rules();

/// The read-only Role "ktrain-view": list, status and logs.
const std::vector<AccessRule>& ktrain_view_rules();

/// What `ktrain setup` makes.
struct SetupPlan {
  std::string namespace_;
  std::vector<std::string> users, groups, service_accounts;  ///< bound to "ktrain"
  std::vector<std::string> view_users, view_groups;          ///< bound to "ktrain-view"
  std::string gpus, cpu, memory;   ///< ResourceQuota requests.*; "" = no limit
  int max_jobs = 0, max_pods = 0;  ///< ResourceQuota counts; 0 = no limit
  std::string default_cpu = "100m", default_memory = "256Mi";  ///< LimitRange defaultRequest
  std::vector<std::string> allow_egress;  ///< CIDRs pods may reach beyond DNS and each other
  std::string cluster_queue;  ///< Kueue ClusterQueue for the LocalQueue "default"; "" = none
};

/// The objects of `plan`, in apply order (Namespace first; cluster-scoped
/// PriorityClasses next). Pure: what --dry-run=client prints.
std::vector<nlohmann::ordered_json> setup_objects(const SetupPlan& plan);

/// Registers `ktrain setup`.
void add_setup_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
