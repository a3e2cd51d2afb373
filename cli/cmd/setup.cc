#include "cmd/setup.h"

#include <memory>
#include <optional>
#include <ostream>
#include <tuple>

#include "base/error.h"
#include "base/names.h"
#include "base/quantity.h"
#include "kube/client.h"
#include "kube/connection.h"
#include "render/yaml_json.h"

namespace ktrain::cmd {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const std::vector<std::string> kRead = {"get", "list", "watch"};
const std::vector<std::string> kOwn = {"get", "list", "watch", "create", "patch", "delete"};

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
constexpr const char* kFieldManager = "ktrain-setup";
constexpr const char* kTrainingPriority = "ktrain-training";
constexpr const char* kServingPriority = "ktrain-serving";

ordered_json metadata(const std::string& name, const std::string& ns) {
  ordered_json md = {{"name", name}};
  if (!ns.empty()) md["namespace"] = ns;
  md["labels"] = {{kManagedBy, "ktrain"}};
  return md;
}

ordered_json object(const char* api_version, const char* kind, const std::string& name,
                    const std::string& ns) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"metadata", metadata(name, ns)}};
}

/// RBAC rules: one per API group and verb set, resources in the order given.
ordered_json role_rules(const std::vector<AccessRule>& rules) {
  ordered_json out = ordered_json::array();
  for (const auto& r : rules) {
    const std::string resource =
        r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
    bool merged = false;
    for (auto& o : out) {
      if (o["apiGroups"][0] == r.group && o["verbs"] == ordered_json(r.verbs)) {
        o["resources"].push_back(resource);
        merged = true;
        break;
      }
    }
    if (!merged) {
      out.push_back({{"apiGroups", {r.group}}, {"resources", {resource}}, {"verbs", r.verbs}});
    }
  }
  return out;
}

ordered_json role_binding(const std::string& name, const std::string& ns,
                          const std::vector<std::string>& users,
                          const std::vector<std::string>& groups,
                          const std::vector<std::string>& service_accounts) {
  ordered_json b = object("rbac.authorization.k8s.io/v1", "RoleBinding", name, ns);
  ordered_json subjects = ordered_json::array();
  for (const auto& u : users)
    subjects.push_back({{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", u}});
  for (const auto& g : groups)
    subjects.push_back({{"kind", "Group"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", g}});
  for (const auto& sa : service_accounts)
    subjects.push_back({{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", ns}});
  b["subjects"] = subjects;
  b["roleRef"] = {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}};
  return b;
}

ordered_json network_policy(const std::string& name, const std::string& ns, ordered_json spec) {
  ordered_json p = object("networking.k8s.io/v1", "NetworkPolicy", name, ns);
  p["spec"] = std::move(spec);
  return p;
}

/// One right that --check asks about, and the API server's answer.
struct CheckRow {
  const AccessRule* rule;
  std::string verb;
  bool allowed = false;
  std::string reason;
};

}  // namespace

const std::vector<AccessRule>& ktrain_access_rules() {
  static const std::vector<AccessRule> rules = {
      {"", "pods", "", kRead, "status, logs, list of a sweep, submit --follow"},
      {"", "pods", "log", {"get"}, "logs, submit --follow"},
      // WebSocket streams are GETs: 1.30 asks for get, 1.31+ for create as well.
      {"", "pods", "exec", {"get", "create"}, "exec"},
      {"", "pods", "portforward", {"get", "create"}, "port-forward"},
      {"", "events", "", kRead, "status (why a run waits or failed)"},
      {"", "services", "", kOwn, "submit and serve (a run's headless Service), delete"},
      {"", "secrets", "", {"create", "delete"}, "submit and delete (a run's rendezvous Secret)"},
      {"batch", "jobs", "", kOwn, "submit, list, status, stop, resume, delete"},
      {"apps", "deployments", "", kOwn, "serve, list, status, delete"},
      {"apps", "deployments", "scale", {"patch"}, "scale"},
      {"autoscaling", "horizontalpodautoscalers", "", kOwn, "serve, scale, delete"},
      {"policy", "poddisruptionbudgets", "", kOwn, "serve, delete"},
      {"scheduling.volcano.sh", "podgroups", "", kOwn, "submit with scheduling.gang: volcano"},
      {"kubeflow.org", "pytorchjobs", "", kOwn, "submit with train.target pytorchjob"},
      {"kubeflow.org", "tfjobs", "", kOwn, "submit with train.target tfjob"},
      {"kubeflow.org", "mpijobs", "", kOwn, "submit with train.target mpijob"},
      {"trainer.kubeflow.org", "trainjobs", "", kOwn, "submit with train.target trainjob"},
      {"trainer.kubeflow.org", "trainingruntimes", "", kOwn,
       "submit with train.target trainjob of an image without the launcher"},
      {"jobset.x-k8s.io", "jobsets", "", kOwn, "submit with train.target jobset"},
      {"serving.kserve.io", "inferenceservices", "", kOwn, "serve with serve.target kserve"},
      {"leaderworkerset.x-k8s.io", "leaderworkersets", "", kOwn, "serve with serve.target lws"},
      {"metrics.k8s.io", "pods", "", {"get", "list"}, "top (CPU and memory)"},
  };
  return rules;
}

const std::vector<AccessRule>& ktrain_view_rules() {
  static const std::vector<AccessRule> rules = {
      {"", "pods", "", kRead, "status, logs"},
      {"", "pods", "log", {"get"}, "logs"},
      {"", "events", "", kRead, "status"},
      {"", "services", "", kRead, "status"},
      {"batch", "jobs", "", kRead, "list, status"},
      {"apps", "deployments", "", kRead, "list, status"},
      {"autoscaling", "horizontalpodautoscalers", "", kRead, "status"},
      {"policy", "poddisruptionbudgets", "", kRead, "status"},
      {"scheduling.volcano.sh", "podgroups", "", kRead, "status"},
      {"kubeflow.org", "pytorchjobs", "", kRead, "list, status"},
      {"kubeflow.org", "tfjobs", "", kRead, "list, status"},
      {"kubeflow.org", "mpijobs", "", kRead, "list, status"},
      {"trainer.kubeflow.org", "trainjobs", "", kRead, "list, status"},
      {"jobset.x-k8s.io", "jobsets", "", kRead, "list, status"},
      {"serving.kserve.io", "inferenceservices", "", kRead, "list, status"},
      {"leaderworkerset.x-k8s.io", "leaderworkersets", "", kRead, "list, status"},
      {"metrics.k8s.io", "pods", "", {"get", "list"}, "top"},
  };
  return rules;
}

std::vector<ordered_json> setup_objects(const SetupPlan& plan) {
  const std::string& ns = plan.namespace_;
  std::vector<ordered_json> out;
  out.push_back(object("v1", "Namespace", ns, ""));

  // Training below serving: a service's replicas may take the place of training pods.
  for (auto [name, value, what] :
       {std::tuple{kTrainingPriority, 1000, "ktrain training runs (scheduling.priority)"},
        std::tuple{kServingPriority, 10000, "ktrain services, above training runs"}}) {
    ordered_json pc = object("scheduling.k8s.io/v1", "PriorityClass", name, "");
    pc["value"] = value;
    pc["globalDefault"] = false;
    pc["description"] = what;
    out.push_back(std::move(pc));
  }

  ordered_json hard = ordered_json::object();
  if (!plan.gpus.empty()) hard["requests.nvidia.com/gpu"] = plan.gpus;
  if (!plan.cpu.empty()) hard["requests.cpu"] = plan.cpu;
  if (!plan.memory.empty()) hard["requests.memory"] = plan.memory;
  if (plan.max_jobs > 0) hard["count/jobs.batch"] = std::to_string(plan.max_jobs);
  if (plan.max_pods > 0) hard["pods"] = std::to_string(plan.max_pods);
  if (!hard.empty()) {
    ordered_json q = object("v1", "ResourceQuota", "ktrain", ns);
    q["spec"]["hard"] = hard;
    out.push_back(std::move(q));
  }
  // With a quota on requests, a pod must name them: containers that do not get these.
  ordered_json lr = object("v1", "LimitRange", "ktrain", ns);
  lr["spec"]["limits"] = ordered_json::array(
      {{{"type", "Container"},
        {"defaultRequest", {{"cpu", plan.default_cpu}, {"memory", plan.default_memory}}}}});
  out.push_back(std::move(lr));

  ordered_json role = object("rbac.authorization.k8s.io/v1", "Role", "ktrain", ns);
  role["rules"] = role_rules(ktrain_access_rules());
  out.push_back(std::move(role));
  ordered_json view = object("rbac.authorization.k8s.io/v1", "Role", "ktrain-view", ns);
  view["rules"] = role_rules(ktrain_view_rules());
  out.push_back(std::move(view));
  if (!plan.users.empty() || !plan.groups.empty() || !plan.service_accounts.empty())
    out.push_back(role_binding("ktrain", ns, plan.users, plan.groups, plan.service_accounts));
  if (!plan.view_users.empty() || !plan.view_groups.empty())
    out.push_back(role_binding("ktrain-view", ns, plan.view_users, plan.view_groups, {}));

  // Nothing in or out by default; DNS; the pods of runs with each other (a run's
  // nodes meet at its rendezvous and talk NCCL); and the CIDRs asked for.
  out.push_back(network_policy(
      "ktrain-default-deny", ns,
      {{"podSelector", ordered_json::object()}, {"policyTypes", {"Ingress", "Egress"}}}));
  out.push_back(network_policy(
      "ktrain-allow-dns", ns,
      {{"podSelector", ordered_json::object()},
       {"policyTypes", {"Egress"}},
       {"egress",
        {{{"to",
           {{{"namespaceSelector",
              {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
             {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}}}},
          {"ports",
           {{{"protocol", "UDP"}, {"port", 53}}, {{"protocol", "TCP"}, {"port", 53}}}}}}}}));
  const ordered_json ktrain_pods = {{"matchLabels", {{kManagedBy, "ktrain"}}}};
  out.push_back(network_policy("ktrain-runs", ns,
                               {{"podSelector", ktrain_pods},
                                {"policyTypes", {"Ingress", "Egress"}},
                                {"ingress", {{{"from", {{{"podSelector", ktrain_pods}}}}}}},
                                {"egress", {{{"to", {{{"podSelector", ktrain_pods}}}}}}}}));
  if (!plan.allow_egress.empty()) {
    ordered_json to = ordered_json::array();
    for (const auto& cidr : plan.allow_egress) to.push_back({{"ipBlock", {{"cidr", cidr}}}});
    out.push_back(network_policy("ktrain-allow-egress", ns,
                                 {{"podSelector", ordered_json::object()},
                                  {"policyTypes", {"Egress"}},
                                  {"egress", {{{"to", to}}}}}));
  }
  if (!plan.cluster_queue.empty()) {
    ordered_json lq = object("kueue.x-k8s.io/v1beta1", "LocalQueue", "default", ns);
    lq["spec"]["clusterQueue"] = plan.cluster_queue;
    out.push_back(std::move(lq));
  }
  return out;
}

namespace {

/// A CIDR such as 10.0.0.0/8 or fd00::/8 (checked enough to say where a typo is; the API
/// server checks the rest).
bool looks_like_cidr(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size()) return false;
  for (char c : s.substr(slash + 1))
    if (c < '0' || c > '9') return false;
  const int bits = std::stoi(s.substr(slash + 1, 3));
  const std::string addr = s.substr(0, slash);
  const bool v6 = addr.find(':') != std::string::npos;
  if (bits > (v6 ? 128 : 32)) return false;
  return addr.find_first_not_of(v6 ? "0123456789abcdefABCDEF:" : "0123456789.") ==
         std::string::npos;
}

struct SetupOptions {
  std::string namespace_;
  SetupPlan plan;
  std::string dry_run;  ///< "", "client" or "server"
  bool check = false;

  void validate() {
    if (!is_dns1123_label(namespace_) || namespace_.size() > 63) {
      throw UsageError("NAMESPACE '" + namespace_ +
                       "': not a namespace name (a DNS-1123 label: lower-case letters, digits "
                       "and '-', at most 63)");
    }
    if (dry_run != "" && dry_run != "client" && dry_run != "server" && dry_run != "none") {
      throw UsageError("--dry-run=" + dry_run + ": expected client, server or none");
    }
    if (dry_run == "none") dry_run.clear();
    plan.namespace_ = namespace_;
    for (auto [flag, value] :
         {std::pair{"--gpus", &plan.gpus}, std::pair{"--cpu", &plan.cpu},
          std::pair{"--memory", &plan.memory}, std::pair{"--default-cpu", &plan.default_cpu},
          std::pair{"--default-memory", &plan.default_memory}}) {
      if (!value->empty() && !is_quantity(*value)) {
        throw UsageError(std::string(flag) + " " + *value +
                         ": not a Kubernetes quantity (like 16, 500m, 256Gi)");
      }
    }
    for (const auto& c : plan.allow_egress) {
      if (!looks_like_cidr(c))
        throw UsageError("--allow-egress " + c + ": not a CIDR (like 10.0.0.0/8 or 0.0.0.0/0)");
    }
    for (const auto& sa : plan.service_accounts) {
      if (!is_dns1123_subdomain(sa))
        throw UsageError("--service-account " + sa + ": not a service account name");
    }
    if (!plan.cluster_queue.empty() && !is_dns1123_subdomain(plan.cluster_queue))
      throw UsageError("--cluster-queue " + plan.cluster_queue + ": not a ClusterQueue name");
    if (plan.max_jobs < 0 || plan.max_pods < 0)
      throw UsageError("--max-jobs and --max-pods take a number of 1 or more");
    if (check && (!dry_run.empty() || !plan.users.empty() || !plan.groups.empty() ||
                  !plan.gpus.empty() || !plan.cpu.empty() || !plan.memory.empty())) {
      throw UsageError("--check only reads: it takes NAMESPACE and no other setup flags");
    }
  }

  int run(Env& env) {
    if (check) return run_check(env);
    std::vector<ordered_json> objects = setup_objects(plan);
    if (dry_run == "client") {
      *env.out << (env.global.output == "json"
                       ? ordered_json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}})
                                 .dump(2) +
                             "\n"
                       : render::to_yaml(objects));
      return exit_code::kOk;
    }
    kube::Connection conn(env);
    kube::Client& client = conn.client();
    // Kueue's LocalQueue only where Kueue is: asked for without it, nothing is sent.
    const bool kueue = client.get_if_exists("/apis/kueue.x-k8s.io/v1beta1").has_value();
    if (!plan.cluster_queue.empty() && !kueue) {
      throw Error("--cluster-queue " + plan.cluster_queue +
                  ": this cluster does not serve kueue.x-k8s.io/v1beta1 (Kueue is not "
                  "installed: https://kueue.sigs.k8s.io/docs/installation/); nothing was "
                  "changed");
    }
    kube::ApplyOptions ao;
    ao.field_manager = kFieldManager;
    ao.dry_run = dry_run == "server";
    for (const auto& obj : objects) {
      const std::string ref = obj.value("kind", "") + "/" + obj["metadata"].value("name", "");
      with_context("applying " + ref, [&] { client.apply(obj, "", ao); });
      if (!env.global.quiet)
        *env.out << ref << " applied" << (ao.dry_run ? " (dry run)" : "") << "\n";
    }
    if (kueue && plan.cluster_queue.empty() && !env.global.quiet) {
      *env.err << "ktrain: Kueue is installed: --cluster-queue NAME adds a LocalQueue "
                  "'default' for scheduling.queue\n";
    }
    if (plan.users.empty() && plan.groups.empty() && plan.service_accounts.empty() &&
        !env.global.quiet) {
      *env.err << "ktrain: nobody is bound to the Role 'ktrain' yet: --user, --group or "
                  "--service-account bind them\n";
    }
    return exit_code::kOk;
  }

  int run_check(Env& env) {
    kube::Connection conn(env);
    kube::Client& client = conn.client();
    std::optional<bool> ns_exists;  // nullopt: this user may not tell
    try {
      ns_exists = client
                      .get_if_exists(
                          kube::object_path(kube::resource_type("v1", "Namespace"), "", namespace_))
                      .has_value();
    } catch (const kube::ApiError& e) {
      if (e.http_status() != 403) throw;
    }
    const bool ns_missing = ns_exists && !*ns_exists;
    std::vector<CheckRow> rows;
    std::vector<net::Request> reqs;
    for (const auto& rule : ktrain_access_rules()) {
      for (const auto& verb : rule.verbs) {
        json attrs = {{"namespace", namespace_},
                      {"verb", verb},
                      {"group", rule.group},
                      {"resource", rule.resource}};
        if (!rule.subresource.empty()) attrs["subresource"] = rule.subresource;
        json review = {{"apiVersion", "authorization.k8s.io/v1"},
                       {"kind", "SelfSubjectAccessReview"},
                       {"spec", {{"resourceAttributes", attrs}}}};
        auto req = client.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
        req.headers.emplace_back("Content-Type", "application/json");
        req.body = review.dump();
        reqs.push_back(std::move(req));
        rows.push_back({&rule, verb});
      }
    }
    auto resps = client.send_all(reqs);
    for (size_t i = 0; i < resps.size(); ++i) {
      with_context("asking the API server what this user may do",
                   [&] { client.check(reqs[i], resps[i]); });
      json st;
      try {
        st = json::parse(resps[i].body).at("status");
      } catch (const std::exception&) {
        throw Error("the API server's SelfSubjectAccessReview answer has no status");
      }
      rows[i].allowed = st.value("allowed", false);
      rows[i].reason = st.value("reason", "");
    }
    size_t missing = 0;
    for (const auto& r : rows) missing += r.allowed ? 0 : 1;
    // Who the API server takes this user for (SelfSubjectReview, Kubernetes 1.28+), for
    // the hint: the kubeconfig's user entry is only a name in the file.
    std::string user;
    try {
      auto req = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews");
      req.headers.emplace_back("Content-Type", "application/json");
      req.body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
      auto resp = client.send(req);
      if (resp.ok()) user = json::parse(resp.body)["status"]["userInfo"].value("username", "");
    } catch (const std::exception&) {
      user.clear();  // only a hint
    }
    if (env.global.output == "json") {
      ordered_json j;
      j["namespace"] = namespace_;
      j["namespaceExists"] = ns_exists ? ordered_json(*ns_exists) : ordered_json(nullptr);
      j["allowed"] = missing == 0 && !ns_missing;
      ordered_json checks = ordered_json::array();
      for (const auto& r : rows) {
        checks.push_back({{"verb", r.verb},
                          {"group", r.rule->group},
                          {"resource", r.rule->resource},
                          {"subresource", r.rule->subresource},
                          {"allowed", r.allowed},
                          {"reason", r.reason},
                          {"usedBy", r.rule->why}});
      }
      j["checks"] = checks;
      *env.out << j.dump(2) << "\n";
    } else {
      *env.out << "VERB    RESOURCE                                ALLOWED  USED BY\n";
      for (const auto& r : rows) {
        std::string res = r.rule->resource;
        if (!r.rule->subresource.empty()) res += "/" + r.rule->subresource;
        if (!r.rule->group.empty()) res += "." + r.rule->group;
        std::string line = r.verb;
        line.resize(std::max<size_t>(line.size() + 1, 8), ' ');
        line += res;
        line.resize(std::max<size_t>(line.size() + 1, 48), ' ');
        line += r.allowed ? "yes" : "no";
        line.resize(std::max<size_t>(line.size() + 1, 57), ' ');
        line += r.rule->why;
        *env.out << line << "\n";
      }
      if (ns_missing) {
        *env.out << "\nthe namespace " << namespace_
                 << " does not exist: a cluster admin makes it with 'ktrain setup " << namespace_
                 << "'\n";
      }
      if (missing == 0) {
        *env.out << "\nevery right ktrain uses is granted in " << namespace_ << "\n";
      } else {
        *env.out << "\n"
                 << missing << " of the " << rows.size()
                 << " rights ktrain uses are not granted in " << namespace_
                 << ": a cluster admin grants them with 'ktrain setup " << namespace_ << " --user "
                 << (user.empty() ? "USER" : user) << "'\n";
      }
    }
    return missing == 0 && !ns_missing ? exit_code::kOk : exit_code::kFailed;
  }
};

}  // namespace

void add_setup_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<SetupOptions>();
  auto* sub = app.add_subcommand(
      "setup",
      "Make a team's namespace ready for ktrain (for a cluster admin): quota, limits, roles, "
      "network policies, priority classes, a Kueue queue; --check tells a user what they "
      "lack there");
  sub->add_option("NAMESPACE", opts->namespace_, "The namespace to set up (or check)")->required();
  sub->add_flag("--check", opts->check,
                "Only tell which of the rights ktrain uses the current user lacks in NAMESPACE "
                "(exit 1 when any)");
  auto& p = opts->plan;
  sub->add_option("--user", p.users, "Bind this user to the Role 'ktrain' (repeatable)")
      ->type_name("USER");
  sub->add_option("--group", p.groups, "Bind this group to the Role 'ktrain' (repeatable)")
      ->type_name("GROUP");
  sub->add_option("--service-account", p.service_accounts,
                  "Bind this service account of NAMESPACE to the Role 'ktrain' (repeatable; CI)")
      ->type_name("NAME");
  sub->add_option("--view-user", p.view_users,
                  "Bind this user to the read-only Role 'ktrain-view' (repeatable)")
      ->type_name("USER");
  sub->add_option("--view-group", p.view_groups,
                  "Bind this group to the read-only Role 'ktrain-view' (repeatable)")
      ->type_name("GROUP");
  sub->add_option("--gpus", p.gpus, "ResourceQuota: at most this many GPUs requested at once")
      ->type_name("N");
  sub->add_option("--cpu", p.cpu, "ResourceQuota: at most this much CPU requested (like 256)")
      ->type_name("QUANTITY");
  sub->add_option("--memory", p.memory, "ResourceQuota: at most this much memory (like 2Ti)")
      ->type_name("QUANTITY");
  sub->add_option("--max-jobs", p.max_jobs, "ResourceQuota: at most this many Jobs")
      ->type_name("N");
  sub->add_option("--max-pods", p.max_pods, "ResourceQuota: at most this many pods")
      ->type_name("N");
  sub->add_option("--default-cpu", p.default_cpu,
                  "LimitRange: the CPU request of a container that names none")
      ->type_name("QUANTITY")
      ->capture_default_str();
  sub->add_option("--default-memory", p.default_memory,
                  "LimitRange: the memory request of a container that names none")
      ->type_name("QUANTITY")
      ->capture_default_str();
  sub->add_option("--allow-egress", p.allow_egress,
                  "NetworkPolicy: let pods reach this CIDR (repeatable; 0.0.0.0/0 for all); by "
                  "default only DNS and each other")
      ->type_name("CIDR");
  sub->add_option("--cluster-queue", p.cluster_queue,
                  "Kueue: a LocalQueue 'default' in NAMESPACE that feeds this ClusterQueue")
      ->type_name("NAME");
  sub->add_option("--dry-run", opts->dry_run,
                  "client: print the objects (-o yaml|json), send nothing; server: validate "
                  "on the server, change nothing")
      ->type_name("client|server|none");
  sub->callback([opts, &env, &result] {
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
