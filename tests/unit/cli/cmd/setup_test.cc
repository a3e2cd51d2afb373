#include "cmd/setup.h"

#include <doctest/doctest.h>

#include <set>

using namespace ktrain::cmd;
using nlohmann::ordered_json;

namespace {

const ordered_json* find(const std::vector<ordered_json>& objs, const std::string& kind,
                         const std::string& name) {
  for (const auto& o : objs) {
    if (o["kind"] == kind && o["metadata"]["name"] == name) return &o;
  }
  return nullptr;
}

/// Whether `role` grants `verb` on group/resource.
bool grants(const ordered_json& role, const std::string& group, const std::string& resource,
            const std::string& verb) {
  for (const auto& r : role["rules"]) {
    bool g = false, res = false, v = false;
    for (const auto& x : r["apiGroups"]) g = g || x == group;
    for (const auto& x : r["resources"]) res = res || x == resource;
    for (const auto& x : r["verbs"]) v = v || x == verb;
    if (g && res && v) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("setup: the objects of a team's namespace, in apply order") {
  SetupPlan p;
  p.namespace_ = "team-a";
  p.users = {"alice"};
  p.view_groups = {"auditors"};
  p.gpus = "16";
  p.memory = "512Gi";
  p.max_jobs = 100;
  p.cluster_queue = "gpu-pool";
  const auto objs = setup_objects(p);
  REQUIRE(!objs.empty());
  CHECK(objs[0]["kind"] == "Namespace");
  CHECK(objs[0]["metadata"]["name"] == "team-a");
  for (size_t i = 1; i < objs.size(); ++i) {
    if (objs[i]["kind"] == "PriorityClass") {
      CHECK_FALSE(objs[i]["metadata"].contains("namespace"));
    } else {
      CHECK(objs[i]["metadata"]["namespace"] == "team-a");
    }
    CHECK(objs[i]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ktrain");
  }
  const auto* q = find(objs, "ResourceQuota", "ktrain");
  REQUIRE(q);
  CHECK((*q)["spec"]["hard"] == ordered_json{{"requests.nvidia.com/gpu", "16"},
                                             {"requests.memory", "512Gi"},
                                             {"count/jobs.batch", "100"}});
  const auto* lr = find(objs, "LimitRange", "ktrain");
  REQUIRE(lr);
  CHECK((*lr)["spec"]["limits"][0]["defaultRequest"]["cpu"] == "100m");
  CHECK_FALSE((*lr)["spec"]["limits"][0].contains("default"));  // no default limits
  const auto* b = find(objs, "RoleBinding", "ktrain");
  REQUIRE(b);
  CHECK((*b)["subjects"][0]["name"] == "alice");
  CHECK((*b)["roleRef"]["name"] == "ktrain");
  const auto* vb = find(objs, "RoleBinding", "ktrain-view");
  REQUIRE(vb);
  CHECK((*vb)["subjects"][0]["kind"] == "Group");
  const auto* lq = find(objs, "LocalQueue", "default");
  REQUIRE(lq);
  CHECK((*lq)["spec"]["clusterQueue"] == "gpu-pool");
  for (const char* np : {"ktrain-default-deny", "ktrain-allow-dns", "ktrain-runs"})
    CHECK(find(objs, "NetworkPolicy", np));
  CHECK_FALSE(find(objs, "NetworkPolicy", "ktrain-allow-egress"));
  CHECK(find(objs, "PriorityClass", "ktrain-training"));
  CHECK(find(objs, "PriorityClass", "ktrain-serving"));
}

TEST_CASE("setup: the Role grants what ktrain's verbs use and never reads Secrets") {
  SetupPlan p;
  p.namespace_ = "t";
  const auto objs = setup_objects(p);
  const auto* role = find(objs, "Role", "ktrain");
  REQUIRE(role);
  CHECK(grants(*role, "batch", "jobs", "create"));
  CHECK(grants(*role, "batch", "jobs", "patch"));
  CHECK(grants(*role, "", "pods/log", "get"));
  CHECK(grants(*role, "apps", "deployments/scale", "patch"));
  CHECK(grants(*role, "", "secrets", "create"));
  CHECK(grants(*role, "", "secrets", "delete"));
  for (const char* v : {"get", "list", "watch", "patch", "update"})
    CHECK_FALSE(grants(*role, "", "secrets", v));
  CHECK_FALSE(grants(*role, "", "pods", "create"));
  const auto* view = find(objs, "Role", "ktrain-view");
  REQUIRE(view);
  CHECK(grants(*view, "batch", "jobs", "list"));
  for (const auto& r : (*view)["rules"]) {
    for (const auto& v : r["verbs"]) CHECK((v == "get" || v == "list" || v == "watch"));
    for (const auto& res : r["resources"]) CHECK(res != "secrets");
  }
  // Nobody to bind, no quota: neither is made.
  CHECK_FALSE(find(objs, "RoleBinding", "ktrain"));
  CHECK_FALSE(find(objs, "ResourceQuota", "ktrain"));
  // The rules --check asks about are the Role's.
  for (const auto& rule : ktrain_access_rules()) {
    const std::string res =
        rule.subresource.empty() ? rule.resource : rule.resource + "/" + rule.subresource;
    for (const auto& v : rule.verbs) CHECK(grants(*role, rule.group, res, v));
  }
}

TEST_CASE("setup: egress to CIDRs only when asked") {
  SetupPlan p;
  p.namespace_ = "t";
  p.allow_egress = {"10.0.0.0/8", "0.0.0.0/0"};
  const auto objs = setup_objects(p);
  const auto* e = find(objs, "NetworkPolicy", "ktrain-allow-egress");
  REQUIRE(e);
  CHECK((*e)["spec"]["egress"][0]["to"][1]["ipBlock"]["cidr"] == "0.0.0.0/0");
}
