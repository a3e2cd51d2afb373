#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/kube_backend.h"
#include "kube_fakes.h"

using namespace ktrain;
using kube_test::FakeProcessRunner;
using kube_test::FakeTransport;
using kube_test::TestEnv;
using nlohmann::json;

namespace {

/// A tiny in-memory API server: objects by path, apply/create/get/list/delete.
struct FakeApi {
  std::map<std::string, json> objects;  // path -> object
  int creates = 0, applies = 0, merges = 0;
  std::string minor = "36";  ///< the release /version names

  static std::string content_type(const net::Request& r) {
    for (const auto& [k, v] : r.headers) {
      if (k == "Content-Type") return v;
    }
    return "";
  }

  static std::string unescape(std::string s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  static bool matches(const json& obj, const std::string& selector) {
    if (selector.empty()) return true;
    auto eq = selector.find('=');
    auto k = selector.substr(0, eq), v = selector.substr(eq + 1);
    const auto& labels = obj["metadata"]["labels"];
    return labels.is_object() && labels.value(k, "") == v;
  }

  net::Response handle(const net::Request& r) {
    const auto path = kube_test::path_of(r.url);
    if (r.method == "GET" && path == "/version") {
      return kube_test::json_response(
          200, {{"major", "1"}, {"minor", minor}, {"gitVersion", "v1." + minor + ".3"}});
    }
    if (r.method == "PATCH" && content_type(r) == "application/merge-patch+json") {
      ++merges;
      if (!objects.count(path)) return kube_test::status_response(404, "NotFound", "not found");
      objects[path].merge_patch(json::parse(r.body));
      return kube_test::json_response(200, objects[path]);
    }
    if (r.method == "PATCH") {
      ++applies;
      auto body = json::parse(r.body);
      const bool fresh = !objects.count(path);
      if (kube_test::query_param(r.url, "dryRun") != "All") {
        if (fresh)
          body["metadata"]["uid"] = "uid-" + std::to_string(objects.size());
        else
          body["metadata"]["uid"] = objects[path]["metadata"]["uid"];
        objects[path] = body;
      }
      // As the API server answers an apply: 201 when it created the object.
      return kube_test::json_response(fresh ? 201 : 200, body);
    }
    if (r.method == "POST") {
      ++creates;
      auto body = json::parse(r.body);
      auto p = path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects.count(p)) return kube_test::status_response(409, "AlreadyExists", "exists");
      if (kube_test::query_param(r.url, "dryRun") != "All") objects[p] = body;
      return kube_test::json_response(201, body);
    }
    if (r.method == "DELETE") {
      if (!objects.erase(path)) return kube_test::status_response(404, "NotFound", "not found");
      return kube_test::json_response(200, {{"kind", "Status"}, {"status", "Success"}});
    }
    // GET: an object, or a collection.
    if (objects.count(path)) return kube_test::json_response(200, objects[path]);
    const auto selector = unescape(kube_test::query_param(r.url, "labelSelector"));
    json list = {{"items", json::array()}, {"metadata", json::object()}};
    bool any_prefix = false;
    for (const auto& [p, o] : objects) {
      if (p.rfind(path + "/", 0) == 0 && p.find('/', path.size() + 1) == std::string::npos) {
        any_prefix = true;
        if (matches(o, selector)) list["items"].push_back(o);
      }
    }
    const bool is_collection = path.size() > 1 && path.back() == 's';
    if (!any_prefix && !is_collection)
      return kube_test::status_response(404, "NotFound", "not found");
    return kube_test::json_response(200, list);
  }
};

struct BackendFixture {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  FakeApi api;
  kube::Client client{kube_test::token_config(), tr, t.env, runner};
  backend::KubeBackend kb{client, t.env};
  BackendFixture() {
    tr.handler = [this](const net::Request& r) { return api.handle(r); };
  }
};

project::Project demo_project() {
  project::Project p;
  p.file = "ktrain.yaml";
  p.directory = "/src";
  p.name = "demo";
  p.image.ref = "reg/img:1";
  project::Train tr;
  tr.command = {"python", "train.py"};
  tr.nodes = 2;
  tr.gpus = 1;
  p.train = tr;
  return p;
}

}  // namespace

TEST_CASE("kube backend: submit applies Service, then Secret, then Job, with the run label") {
  BackendFixture f;
  backend::SubmitOptions o;
  o.run_id = "abc12";
  auto r = f.kb.submit(demo_project(), o);
  REQUIRE(r.runs == std::vector<std::string>{"demo-abc12"});
  CHECK(r.objects == std::vector<std::string>{"service/demo-abc12", "secret/demo-abc12-rdzv",
                                              "job.batch/demo-abc12"});
  // First the server's release (what to render for); then dependency order: one
  // perform_all per step; the Secret is created owned by the Service (never patched,
  // read or listed); last, the Job becomes the Service's owner.
  REQUIRE(f.tr.requests.size() == 5);
  CHECK(f.tr.requests[0].method == "GET");
  CHECK(kube_test::path_of(f.tr.requests[0].url) == "/version");
  CHECK(kube_test::path_of(f.tr.requests[1].url) == "/api/v1/namespaces/ml/services/demo-abc12");
  CHECK(f.tr.requests[2].method == "POST");
  CHECK(kube_test::path_of(f.tr.requests[2].url) == "/api/v1/namespaces/ml/secrets");
  CHECK(kube_test::path_of(f.tr.requests[3].url) == "/apis/batch/v1/namespaces/ml/jobs/demo-abc12");
  CHECK(kube_test::path_of(f.tr.requests[4].url) == "/api/v1/namespaces/ml/services/demo-abc12");
  CHECK(f.tr.perform_all_calls == 4);
  CHECK(f.api.merges == 1);
  for (const auto& sent : f.tr.requests) {
    CHECK(kube_test::path_of(sent.url).find("/secrets/") == std::string::npos);
  }
  // The answers are only checked: each request asks for the metadata only, with plain
  // JSON as the fallback.
  for (const auto& sent :
       std::vector<net::Request>(f.tr.requests.begin() + 1, f.tr.requests.end())) {
    auto accept = std::find_if(sent.headers.begin(), sent.headers.end(),
                               [](const auto& h) { return h.first == "Accept"; });
    REQUIRE(accept != sent.headers.end());
    CHECK(accept->second ==
          "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
    CHECK(std::count_if(sent.headers.begin(), sent.headers.end(),
                        [](const auto& h) { return h.first == "Accept"; }) == 1);
  }

  const auto& secret = f.api.objects.at("/api/v1/namespaces/ml/secrets/demo-abc12-rdzv");
  CHECK(secret["metadata"]["labels"]["ktrain.dev/run"] == "demo-abc12");
  const auto token = kube::base64_decode(secret["data"]["token"]);
  CHECK(token.size() == 64);
  const auto& job = f.api.objects.at("/apis/batch/v1/namespaces/ml/jobs/demo-abc12");
  CHECK(job["metadata"]["namespace"] == "ml");
  CHECK(job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ktrain");
  // The Service owned by the Job (by its uid), the Secret by the Service, so that the
  // Job's deletion takes them too.
  const json owner = {{"apiVersion", "batch/v1"},
                      {"kind", "Job"},
                      {"name", "demo-abc12"},
                      {"uid", job["metadata"]["uid"]}};
  const auto& service = f.api.objects.at("/api/v1/namespaces/ml/services/demo-abc12");
  CHECK(service["metadata"]["ownerReferences"] == json::array({owner}));
  const json service_owner = {{"apiVersion", "v1"},
                              {"kind", "Service"},
                              {"name", "demo-abc12"},
                              {"uid", service["metadata"]["uid"]}};
  CHECK(secret["metadata"]["ownerReferences"] == json::array({service_owner}));
  CHECK(!job["metadata"].contains("ownerReferences"));
}

TEST_CASE("kube backend: submit renders for the server's release, asked once") {
  BackendFixture f;
  backend::SubmitOptions o;
  o.run_id = "abc12";
  f.kb.submit(demo_project(), o);
  const auto& job = f.api.objects.at("/apis/batch/v1/namespaces/ml/jobs/demo-abc12");
  CHECK(job["spec"]["podReplacementPolicy"] == "Failed");
  o.run_id = "abc13";
  f.kb.submit(demo_project(), o);
  CHECK(std::count_if(f.tr.requests.begin(), f.tr.requests.end(), [](const net::Request& r) {
          return kube_test::path_of(r.url) == "/version";
        }) == 1);

  // A release that would drop spec.managedBy: refused before anything is sent.
  BackendFixture old;
  old.api.minor = "31";
  auto p = demo_project();
  p.scheduling.queue = "team-a";
  p.scheduling.managed_by = "kueue.x-k8s.io/multikueue";
  try {
    old.kb.submit(p, o);
    FAIL("submitted a managedBy that 1.31 drops");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("Kubernetes 1.31 does not serve") != std::string::npos);
  }
  CHECK(old.tr.requests.size() == 1);  // the /version alone
  CHECK(old.api.objects.empty());
  // 1.32 serves it: the Job is left to MultiKueue.
  BackendFixture beta;
  beta.api.minor = "32";
  beta.kb.submit(p, o);
  CHECK(beta.api.objects.at("/apis/batch/v1/namespaces/ml/jobs/demo-abc13")["spec"]["managedBy"] ==
        "kueue.x-k8s.io/multikueue");
}

TEST_CASE("kube backend: no owner patch without the Job's uid, nor in a server dry run") {
  BackendFixture f;
  // An answer without metadata.uid (a proxy that strips bodies): nothing to own by.
  f.tr.handler = [&f](const net::Request& r) {
    auto resp = f.api.handle(r);
    if (r.url.find("/jobs/") != std::string::npos) resp.body = "{}";
    return resp;
  };
  backend::SubmitOptions o;
  o.run_id = "abc12";
  auto r = f.kb.submit(demo_project(), o);
  CHECK(r.objects.size() == 3);
  CHECK(f.api.merges == 0);
  BackendFixture g;
  o.dry_run_server = true;
  g.kb.submit(demo_project(), o);
  CHECK(g.api.merges == 0);
  CHECK(g.tr.requests.size() == 4);  // /version, then the three objects
}

TEST_CASE("kube backend: submitting the same run twice changes nothing and keeps the token") {
  BackendFixture f;
  backend::SubmitOptions o;
  o.run_id = "abc12";
  f.kb.submit(demo_project(), o);
  const auto before = f.api.objects;
  f.kb.submit(demo_project(), o);
  CHECK(f.api.objects == before);  // same objects, same uids, same token
  CHECK(f.api.objects.size() == 3);
}

TEST_CASE("kube backend: --dry-run=server sends dryRun=All and persists nothing") {
  BackendFixture f;
  backend::SubmitOptions o;
  o.run_id = "abc12";
  o.dry_run_server = true;
  auto r = f.kb.submit(demo_project(), o);
  CHECK(r.objects.size() == 3);
  CHECK(f.api.objects.empty());
  REQUIRE(kube_test::path_of(f.tr.requests.at(0).url) == "/version");  // asked, nothing sent
  for (size_t i = 1; i < f.tr.requests.size(); ++i) {
    CHECK(kube_test::query_param(f.tr.requests[i].url, "dryRun") == "All");
  }
}

TEST_CASE("kube backend: a sweep submits every run; each gets its own Secret") {
  BackendFixture f;
  auto p = demo_project();
  p.train->sweep = {{"lr", {"0.1", "0.01", "0.001"}}};
  backend::SubmitOptions o;
  o.run_id = "sw001";
  auto r = f.kb.submit(p, o);
  CHECK(r.runs.size() == 3);
  CHECK(r.objects.size() == 9);
  CHECK(f.tr.perform_all_calls == 4);  // four steps, each run's objects sent together
  CHECK(f.api.merges == 3);            // each run's Service owned by its Job
  CHECK(f.api.objects.count("/api/v1/namespaces/ml/secrets/demo-sw001-2-rdzv"));
}

TEST_CASE("kube backend: a refused object is reported with its name and the server's words") {
  BackendFixture f;
  f.tr.handler = [&f](const net::Request& r) {
    if (r.url.find("/jobs/") != std::string::npos) {
      return kube_test::status_response(
          422, "Invalid", "Job.batch \"demo-abc12\" is invalid",
          {{{"field", "spec.template.spec.containers[0].image"}, {"message", "Required value"}}});
    }
    return f.api.handle(r);
  };
  backend::SubmitOptions o;
  o.run_id = "abc12";
  try {
    f.kb.submit(demo_project(), o);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 1);
    const std::string m = e.what();
    CHECK(m.find("submitting: applying job.batch/demo-abc12: PATCH") == 0);
    CHECK(m.find("containers[0].image: Required value") != std::string::npos);
    // The Service and the Secret were created (201) and are removed again.
    CHECK(m.find("\n(the 2 objects this submit had created were removed)") != std::string::npos);
  }
  CHECK_FALSE(f.api.objects.count("/api/v1/namespaces/ml/secrets/demo-abc12-rdzv"));
  CHECK_FALSE(f.api.objects.count("/api/v1/namespaces/ml/services/demo-abc12"));
}

TEST_CASE("kube backend: -n must agree with the project's namespace") {
  BackendFixture f;
  auto p = demo_project();
  p.namespace_ = "team";
  CHECK(f.kb.namespace_for(p) == "team");
  f.t.env.global.namespace_ = "other";
  CHECK_THROWS_AS(f.kb.namespace_for(p), UsageError);
  p.namespace_.clear();
  CHECK(f.kb.namespace_for(p) == "other");
}

TEST_CASE(
    "kube backend: list pages through Jobs and Deployments with the managed-by selector, newest "
    "first") {
  BackendFixture f;
  int served = 0, deployments = 0, discovered = 0;
  f.tr.handler = [&served, &deployments, &discovered](const net::Request& r) {
    // Discovery: of the operators' APIs, this cluster serves the Training Operator's.
    if (kube_test::path_of(r.url) == "/apis") {
      ++discovered;
      return kube_test::json_response(
          200, {{"groups",
                 json::array({{{"name", "kubeflow.org"},
                               {"versions", json::array({{{"groupVersion", "kubeflow.org/v1"}}})}},
                              {{"name", "batch"},
                               {"versions", json::array({{{"groupVersion", "batch/v1"}}})}}})}});
    }
    CHECK(kube_test::query_param(r.url, "labelSelector") ==
          "app.kubernetes.io%2Fmanaged-by%3Dktrain");
    CHECK(kube_test::query_param(r.url, "limit") == "250");
    if (kube_test::path_of(r.url) == "/apis/apps/v1/namespaces/ml/deployments") {
      ++deployments;
      json d = {{"metadata",
                 {{"name", "web"},
                  {"namespace", "ml"},
                  {"creationTimestamp", "2027-01-15T07:09:00Z"},
                  {"labels", {{"ktrain.dev/run", "web"}}}}},
                {"spec", {{"replicas", 2}}},
                {"status", {{"readyReplicas", 2}}}};
      return kube_test::json_response(200, {{"items", json::array({d})}});
    }
    if (kube_test::path_of(r.url) == "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs") {
      json replica = {
          {"replicas", 1},
          {"template",
           {{"spec",
             {{"containers",
               json::array({{{"name", "pytorch"},
                             {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}}}};
      json workers = replica;
      workers["replicas"] = 3;
      json pt = {{"metadata",
                  {{"name", "pt"},
                   {"namespace", "ml"},
                   {"creationTimestamp", "2027-01-15T06:00:00Z"},
                   {"labels", {{"ktrain.dev/run", "pt"}}}}},
                 {"spec", {{"pytorchReplicaSpecs", {{"Master", replica}, {"Worker", workers}}}}},
                 {"status",
                  {{"conditions", json::array({{{"type", "Created"}, {"status", "True"}},
                                               {{"type", "Running"}, {"status", "True"}}})}}}};
      return kube_test::json_response(200, {{"items", json::array({pt})}});
    }
    if (kube_test::path_of(r.url).rfind("/apis/kubeflow.org/v1/", 0) == 0) {
      return kube_test::json_response(200, {{"items", json::array()}});  // TFJobs, MPIJobs
    }
    CHECK(kube_test::path_of(r.url) == "/apis/batch/v1/namespaces/ml/jobs");
    const int page = served++;
    json items = json::array();
    for (int i = 0; i < 2; ++i) {
      const int n = page * 2 + i;
      items.push_back({{"metadata",
                        {{"name", "r" + std::to_string(n)},
                         {"namespace", "ml"},
                         {"creationTimestamp", "2027-01-15T07:0" + std::to_string(n) + ":00Z"},
                         {"labels", {{"ktrain.dev/run", "r" + std::to_string(n)}}}}},
                       {"spec", {{"parallelism", 1}}},
                       {"status", {{"active", 1}}}});
    }
    json list = {{"items", items}, {"metadata", json::object()}};
    if (page < 2) list["metadata"]["continue"] = "p" + std::to_string(page + 1);
    return kube_test::json_response(200, list);
  };
  auto runs = f.kb.list({});
  REQUIRE(runs.size() == 8);
  CHECK(discovered == 1);
  // The PyTorchJob, oldest: from its own conditions and replicas.
  CHECK(runs.back().name == "pt");
  CHECK(runs.back().kind == "train");
  CHECK(runs.back().nodes == 4);
  CHECK(runs.back().gpus == 8);
  CHECK(runs.back().state == backend::RunState::kRunning);
  runs.pop_back();
  CHECK(runs.front().name == "web");  // the service, newest
  CHECK(runs.front().kind == "serve");
  CHECK(runs.front().nodes == 2);
  CHECK(runs.front().state == backend::RunState::kRunning);
  CHECK(runs[1].name == "r5");
  CHECK(runs[1].kind == "train");
  CHECK(runs.back().name == "r0");
  CHECK(served == 3);
  CHECK(deployments == 1);

  served = 0;
  f.tr.handler = [&served](const net::Request& r) {
    const auto path = kube_test::path_of(r.url);
    CHECK(
        (path == "/apis/batch/v1/jobs" || path == "/apis/apps/v1/deployments" || path == "/apis"));
    ++served;
    return kube_test::json_response(200, {{"items", json::array()}});
  };
  CHECK(f.kb.list({.all_namespaces = true}).empty());
  CHECK(served == 3);  // Jobs, Deployments, and the discovery that finds no operator
}

TEST_CASE("kube backend: status of a service: its Deployment, only when ktrain made it") {
  BackendFixture f;
  const std::string path = "/apis/apps/v1/namespaces/ml/deployments/web";
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}, {"namespace", "ml"}, {"labels", json::object()}}},
            {"spec", {{"replicas", 1}}},
            {"status", {{"readyReplicas", 1}}}};
  f.api.objects[path] = d;
  // Someone else's Deployment of that name is not a ktrain service.
  CHECK_THROWS_WITH_AS(f.kb.status("web"), doctest::Contains("run \"web\" not found"), Error);
  d["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "ktrain"}, {"ktrain.dev/run", "web"}};
  f.api.objects[path] = d;
  auto st = f.kb.status("web");
  CHECK(st.summary.kind == "serve");
  CHECK(st.summary.state == backend::RunState::kRunning);
}

TEST_CASE("kube backend: status of an unknown run is 'not found', exit 1") {
  BackendFixture f;
  try {
    f.kb.status("nope");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 1);
    CHECK(std::string(e.what()).find("run \"nope\" not found in namespace \"ml\"") !=
          std::string::npos);
  }
}

TEST_CASE("kube backend: status reads the Job, its pods and events; first failed rank") {
  BackendFixture f;
  f.api.objects["/apis/batch/v1/namespaces/ml/jobs/r"] = {
      {"metadata", {{"name", "r"}, {"labels", {{"ktrain.dev/run", "r"}}}}},
      {"spec", {{"parallelism", 2}}},
      {"status", {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}}};
  auto failed_pod = [](const std::string& name, int idx, int code, const std::string& at) {
    return json{{"metadata",
                 {{"name", name},
                  {"labels",
                   {{"ktrain.dev/run", "r"},
                    {"batch.kubernetes.io/job-completion-index", std::to_string(idx)}}}}},
                {"status",
                 {{"phase", "Failed"},
                  {"containerStatuses",
                   {{{"name", "train"},
                     {"state", {{"terminated", {{"exitCode", code}, {"finishedAt", at}}}}}}}}}}};
  };
  f.api.objects["/api/v1/namespaces/ml/pods/r-0"] =
      failed_pod("r-0", 0, 75, "2027-01-15T07:00:01Z");
  f.api.objects["/api/v1/namespaces/ml/pods/r-1"] = failed_pod("r-1", 1, 2, "2027-01-15T07:00:05Z");
  auto st = f.kb.status("r");
  CHECK(st.summary.state == backend::RunState::kFailed);
  REQUIRE(st.ranks.size() == 2);
  CHECK(st.ranks[1].exit_code == 2);
  CHECK(st.first_failed == 1);  // rank 0 only stopped because its peer failed (exit 75)
}

TEST_CASE("kube backend: logs fetch each rank's current pod log with the options") {
  BackendFixture f;
  auto p = [](const std::string& name, int idx, const std::string& created) {
    return json{{"metadata",
                 {{"name", name},
                  {"creationTimestamp", created},
                  {"labels",
                   {{"ktrain.dev/run", "r"},
                    {"batch.kubernetes.io/job-completion-index", std::to_string(idx)}}}}},
                {"status", {{"phase", "Running"}}}};
  };
  f.api.objects["/api/v1/namespaces/ml/pods/r-0-a"] = p("r-0-a", 0, "2027-01-15T07:00:00Z");
  f.api.objects["/api/v1/namespaces/ml/pods/r-0-b"] = p("r-0-b", 0, "2027-01-15T07:09:00Z");
  f.api.objects["/api/v1/namespaces/ml/pods/r-1-a"] = p("r-1-a", 1, "2027-01-15T07:00:00Z");
  std::vector<net::Request> log_reqs;
  f.tr.handler = [&](const net::Request& r) {
    if (r.url.find("/log") != std::string::npos) {
      log_reqs.push_back(r);
      net::Response resp;
      resp.status = 200;
      const bool zero = r.url.find("r-0-b") != std::string::npos;
      resp.body = zero ? "2027-01-15T07:10:00.000000001Z [rank 0] hello\n"
                         "2027-01-15T07:10:01.000000001Z [rank 1] world\n"
                       : "2027-01-15T07:10:00.5Z [rank 2] from node one\n";
      return resp;
    }
    return f.api.handle(r);
  };
  backend::LogOptions o;
  o.tail = 10;
  o.since = std::chrono::system_clock::from_time_t(1'799'996'400);
  o.previous = true;
  std::vector<backend::LogLine> lines;
  f.kb.logs("r", o, [&](const backend::LogLine& l) {
    lines.push_back(l);
    return true;
  });
  REQUIRE(log_reqs.size() == 2);
  CHECK(kube_test::path_of(log_reqs[0].url) == "/api/v1/namespaces/ml/pods/r-0-b/log");
  CHECK(kube_test::query_param(log_reqs[0].url, "container") == "train");
  CHECK(kube_test::query_param(log_reqs[0].url, "timestamps") == "true");
  CHECK(kube_test::query_param(log_reqs[0].url, "tailLines") == "10");
  CHECK(kube_test::query_param(log_reqs[0].url, "sinceTime") == "2027-01-15T07%3A00%3A00Z");
  CHECK(kube_test::query_param(log_reqs[0].url, "previous") == "true");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rank == 0);
  CHECK(lines[0].text == "[rank 0] hello");
  CHECK(lines[0].timestamp == "2027-01-15T07:10:00.000000001Z");
  CHECK(lines[2].rank == 1);

  // --rank keeps one worker's lines; --node one pod.
  lines.clear();
  backend::LogOptions only;
  only.rank = 1;
  f.kb.logs("r", only, [&](const backend::LogLine& l) {
    lines.push_back(l);
    return true;
  });
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].text == "[rank 1] world");
  lines.clear();
  backend::LogOptions node;
  node.node = 1;
  f.kb.logs("r", node, [&](const backend::LogLine& l) {
    lines.push_back(l);
    return true;
  });
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rank == 1);
  node.node = 7;
  CHECK_THROWS_AS(f.kb.logs("r", node, [](const backend::LogLine&) { return true; }), UsageError);
}

TEST_CASE("kube backend: a log line longer than 1 MiB is cut there and marked") {
  BackendFixture f;
  f.api.objects["/api/v1/namespaces/ml/pods/r-0-a"] = {
      {"metadata",
       {{"name", "r-0-a"},
        {"labels", {{"ktrain.dev/run", "r"}, {"batch.kubernetes.io/job-completion-index", "0"}}}}},
      {"status", {{"phase", "Running"}}}};
  const std::string ts = "2027-01-15T07:10:00.000000001Z ";
  f.tr.handler = [&](const net::Request& r) {
    if (r.url.find("/log") == std::string::npos) return f.api.handle(r);
    net::Response resp;
    resp.status = 200;
    resp.body = ts + "before\n" + ts + std::string(3 << 20, 'x') + "\n" + ts + "after\n";
    return resp;
  };
  std::vector<backend::LogLine> lines;
  f.kb.logs("r", {}, [&](const backend::LogLine& l) {
    lines.push_back(l);
    return true;
  });
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].text == "before");
  CHECK(lines[1].timestamp == "2027-01-15T07:10:00.000000001Z");
  CHECK(lines[1].text == std::string((1 << 20) - ts.size(), 'x') + " [ktrain: line cut at 1 MiB]");
  CHECK(lines[2].text == "after");
}

TEST_CASE("kube backend: logs of an unknown run is 'not found'") {
  BackendFixture f;
  CHECK_THROWS_WITH_AS(f.kb.logs("nope", {}, [](const backend::LogLine&) { return true; }),
                       doctest::Contains("not found"), Error);
}

TEST_CASE("kube backend: remove deletes everything with the run label, background propagation") {
  BackendFixture f;
  backend::SubmitOptions o;
  o.run_id = "abc12";
  f.kb.submit(demo_project(), o);
  f.api.objects["/api/v1/namespaces/ml/services/unrelated"] = {
      {"metadata", {{"name", "unrelated"}, {"labels", {{"ktrain.dev/run", "x"}}}}}};
  f.tr.requests.clear();
  f.kb.remove("demo-abc12");
  CHECK(f.api.objects.size() == 1);
  CHECK(f.api.objects.count("/api/v1/namespaces/ml/services/unrelated"));
  int deletes = 0;
  for (const auto& r : f.tr.requests) {
    if (r.method != "DELETE") continue;
    ++deletes;
    CHECK(json::parse(r.body)["propagationPolicy"] == "Background");
  }
  CHECK(deletes == 3);
  CHECK_THROWS_WITH_AS(f.kb.remove("demo-abc12"), doctest::Contains("not found"), Error);
}

TEST_CASE("kube backend: remove skips kinds whose API is not installed (404 on the list)") {
  BackendFixture f;
  f.api.objects["/apis/batch/v1/namespaces/ml/jobs/r"] = {
      {"metadata", {{"name", "r"}, {"labels", {{"ktrain.dev/run", "r"}}}}}};
  f.tr.handler = [&f](const net::Request& r) {
    if (r.url.find("volcano") != std::string::npos ||
        r.url.find("autoscaling") != std::string::npos) {
      return kube_test::status_response(404, "NotFound",
                                        "the server could not find the requested resource");
    }
    return f.api.handle(r);
  };
  f.kb.remove("r");
  CHECK(f.api.objects.empty());
}

TEST_CASE("kube backend: the rendezvous secret and random tokens") {
  auto s = backend::rendezvous_secret("r", "ml", {{"ktrain.dev/run", "r"}}, "tok");
  CHECK(s["metadata"]["name"] == "r-rdzv");
  CHECK(s["data"]["token"] == kube::base64_encode("tok"));
  auto a = backend::random_token(), b = backend::random_token();
  CHECK(a.size() == 64);
  CHECK(a != b);
}

TEST_CASE("kube backend: a sweep larger than a batch goes run by run, each run in order") {
  BackendFixture f;
  auto p = demo_project();
  std::vector<std::string> points;
  for (int i = 0; i < 200; ++i) points.push_back(std::to_string(i));
  p.train->sweep = {{"seed", points}};
  backend::SubmitOptions o;
  o.run_id = "big01";
  auto r = f.kb.submit(p, o);
  REQUIRE(r.runs.size() == 200);
  REQUIRE(r.objects.size() == 600);
  // Named as before: every Service, then every Secret, then every Job, run by run.
  CHECK(r.objects[0] == "service/demo-big01-0");
  CHECK(r.objects[199] == "service/demo-big01-199");
  CHECK(r.objects[200] == "secret/demo-big01-0-rdzv");
  CHECK(r.objects[599] == "job.batch/demo-big01-199");
  // Sent in batches of at most 128, in which a run has at most one step: its Service,
  // then its Secret (POST to the collection: the name is in the body, and the Service
  // as its owner), then its Job.
  std::map<std::string, size_t> secret_at, service_at, job_at;
  for (size_t i = 0; i < f.tr.requests.size(); ++i) {
    const auto& req = f.tr.requests[i];
    const auto path = kube_test::path_of(req.url);
    const auto name = path.substr(path.rfind('/') + 1);
    if (req.method == "POST") {
      secret_at[json::parse(req.body)["metadata"]["name"].get<std::string>()] = i;
    } else if (FakeApi::content_type(req) == "application/merge-patch+json") {
      // The owner patches, after the Job: checked below.
      CHECK(job_at.count(name) + job_at.count(name.substr(0, name.size() - 5)) == 1);
    } else if (path.find("/services/") != std::string::npos) {
      service_at[name] = i;
    } else if (path.find("/jobs/") != std::string::npos) {
      job_at[name] = i;
    }
  }
  REQUIRE(job_at.size() == 200);
  const size_t batches = f.tr.perform_all_calls;
  CHECK(batches >= 600 / 128 + 1);
  for (const auto& [run, at] : job_at) {
    INFO(run);
    CHECK(service_at.at(run) < secret_at.at(run + "-rdzv"));
    CHECK(secret_at.at(run + "-rdzv") < at);
  }
  // The first Job goes only after the first 128 Secrets (which go after their Services).
  size_t first_job = f.tr.requests.size();
  for (const auto& [run, at] : job_at) first_job = std::min(first_job, at);
  size_t secrets_before = 0;
  for (const auto& [name, at] : secret_at) secrets_before += at < first_job;
  CHECK(secrets_before == 128);
}

TEST_CASE("kube backend: a feed that fails after objects were applied removes them") {
  BackendFixture f;
  backend::PreparedFeed feed;
  // 128 runs of a Secret and a Service: a full batch, their 128 Services, goes first.
  for (int i = 0; i < 128; ++i) {
    const std::string run = "r" + std::to_string(i);
    json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata", {{"name", run}, {"namespace", "ml"}}},
                {"spec", {{"clusterIP", "None"}}}};
    backend::PreparedFeed::Group group;
    group.push_back(f.kb.prepare(
        nlohmann::ordered_json(backend::rendezvous_secret(run, "ml", {}, "t")), false));
    group.push_back(f.kb.prepare(nlohmann::ordered_json(svc), false));
    REQUIRE(feed.push(std::move(group)));
  }
  // The producer fails while that batch is being sent.
  bool failed = false;
  f.tr.handler = [&](const net::Request& r) {
    if (!failed) {
      failed = true;
      feed.close(std::make_exception_ptr(UsageError("render: run 129 is broken")));
    }
    return f.api.handle(r);
  };
  try {
    f.kb.apply_feed(feed, false);
    FAIL("expected the feed's error");
  } catch (const Error& e) {
    // The feed's words and exit status, and what was undone.
    CHECK(e.exit_status() == 2);
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("render: run 129 is broken") == 0);
    CHECK(m.find("(the 128 objects this submit had created were removed)") != std::string::npos);
  }
  CHECK(f.api.applies == 128);
  CHECK(f.api.creates == 0);  // no Secret went after the failure
  CHECK(f.api.objects.empty());
}

TEST_CASE("kube backend: a feed that fails before anything was sent rethrows its error as is") {
  BackendFixture f;
  backend::PreparedFeed feed;
  feed.close(std::make_exception_ptr(UsageError("image: nothing to run")));
  CHECK_THROWS_AS(f.kb.apply_feed(feed, false), UsageError);
  CHECK(f.tr.requests.empty());
}

TEST_CASE("kube backend: a refused object stops the feed's producer") {
  BackendFixture f;
  f.tr.handler = [&f](const net::Request& r) {
    if (r.method == "POST") return kube_test::status_response(403, "Forbidden", "no secrets");
    return f.api.handle(r);
  };
  backend::PreparedFeed feed;
  std::atomic<bool> refused{false};
  std::thread producer([&] {
    // Far more than the feed holds: the producer waits for room until it is stopped.
    for (int i = 0; i < 5000; ++i) {
      backend::PreparedFeed::Group g;
      g.push_back(f.kb.prepare(nlohmann::ordered_json(backend::rendezvous_secret(
                                   "r" + std::to_string(i), "ml", {}, "t")),
                               false));
      if (!feed.push(std::move(g))) {
        refused = true;
        break;
      }
    }
    feed.close();
  });
  CHECK_THROWS_AS(f.kb.apply_feed(feed, false), Error);
  producer.join();
  CHECK(refused);
  CHECK(f.tr.requests.size() == 128);  // one batch, all refused; nothing after it
}

TEST_CASE("kube backend: status and logs of an operator's run (PyTorchJob)") {
  BackendFixture f;
  const json labels = {{"app.kubernetes.io/managed-by", "ktrain"}, {"ktrain.dev/run", "pt"}};
  f.api.objects["/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/pt"] = {
      {"apiVersion", "kubeflow.org/v1"},
      {"metadata", {{"name", "pt"}, {"labels", labels}}},
      {"spec", {{"pytorchReplicaSpecs", {{"Master", {{"replicas", 1}}}}}}},
      {"status",
       {{"conditions",
         {{{"type", "Running"}, {"status", "True"}, {"reason", "PyTorchJobRunning"}}}}}}};
  f.api.objects["/api/v1/namespaces/ml/pods/pt-master-0"] = {
      {"metadata",
       {{"name", "pt-master-0"},
        {"labels",
         {{"ktrain.dev/run", "pt"},
          {"training.kubeflow.org/replica-type", "master"},
          {"training.kubeflow.org/replica-index", "0"}}},
        {"annotations", {{"kubectl.kubernetes.io/default-container", "pytorch"}}}}},
      {"status",
       {{"phase", "Running"},
        {"containerStatuses", {{{"name", "pytorch"}, {"state", {{"running", json::object()}}}}}}}}};
  std::vector<std::string> asked;
  f.tr.handler = [&](const net::Request& r) {
    asked.push_back(r.method + " " + kube_test::path_of(r.url));
    // A Role that predates the targets may not read JobSets: passed over.
    if (r.url.find("/jobsets/") != std::string::npos) {
      return kube_test::status_response(403, "Forbidden", "forbidden");
    }
    if (r.url.find("/log") != std::string::npos) {
      CHECK(kube_test::query_param(r.url, "container") == "pytorch");
      net::Response resp;
      resp.status = 200;
      resp.body = "2027-01-15T07:10:00.000000001Z [rank 0] hello\n";
      return resp;
    }
    return f.api.handle(r);
  };
  auto st = f.kb.status("pt");
  CHECK(st.summary.kind == "train");
  CHECK(st.summary.state == backend::RunState::kRunning);
  REQUIRE(st.conditions.size() == 1);
  CHECK(st.conditions[0] == "Running: PyTorchJobRunning");
  REQUIRE(st.ranks.size() == 1);
  CHECK(st.ranks[0].pod == "pt-master-0");
  CHECK(st.ranks[0].phase == "Running");
  // The Job, the seven operator kinds and the Deployment, asked for at once.
  CHECK(std::count_if(asked.begin(), asked.end(), [](const std::string& a) {
          return a.rfind("GET ", 0) == 0 && a.size() > 3 && a.substr(a.size() - 3) == "/pt";
        }) == 9);

  std::vector<backend::LogLine> lines;
  f.kb.logs("pt", {}, [&](const backend::LogLine& l) {
    lines.push_back(l);
    return true;
  });
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rank == 0);
  CHECK(lines[0].text == "[rank 0] hello");

  // An object of that name that ktrain did not make is no run.
  f.api.objects["/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/pt"]["metadata"]["labels"] =
      json::object();
  CHECK_THROWS_WITH_AS(f.kb.status("pt"), doctest::Contains("run \"pt\" not found"), Error);
}

TEST_CASE("kube backend: stop and resume an operator's run: its own suspend field") {
  BackendFixture f;
  const json labels = {{"app.kubernetes.io/managed-by", "ktrain"}, {"ktrain.dev/run", "tf"}};
  const std::string tf = "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/tf";
  const std::string js = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/js";
  f.api.objects[tf] = {{"metadata", {{"name", "tf"}, {"labels", labels}}},
                       {"spec", {{"runPolicy", {{"cleanPodPolicy", "None"}}}}}};
  json js_labels = labels;
  js_labels["ktrain.dev/run"] = "js";
  f.api.objects[js] = {{"metadata", {{"name", "js"}, {"labels", js_labels}}},
                       {"spec", {{"replicatedJobs", json::array()}}}};

  CHECK(f.kb.stop("tf"));
  CHECK(f.api.objects[tf]["spec"]["runPolicy"]["suspend"] == true);
  CHECK(f.api.objects[tf]["spec"]["runPolicy"]["cleanPodPolicy"] == "None");
  CHECK(f.api.objects[tf]["metadata"]["labels"]["ktrain.dev/stopped"] == "true");
  CHECK(f.kb.status("tf").summary.state == backend::RunState::kStopped);
  CHECK_FALSE(f.kb.stop("tf"));  // stopped already
  CHECK(f.kb.resume("tf"));
  CHECK(f.api.objects[tf]["spec"]["runPolicy"]["suspend"] == false);
  CHECK_FALSE(f.api.objects[tf]["metadata"]["labels"].contains("ktrain.dev/stopped"));
  CHECK_FALSE(f.kb.resume("tf"));  // not stopped

  CHECK(f.kb.stop("js"));
  CHECK(f.api.objects[js]["spec"]["suspend"] == true);
  auto st = f.kb.status("js");
  CHECK(st.summary.state == backend::RunState::kStopped);
  REQUIRE_FALSE(st.explanations.empty());
  CHECK(st.explanations[0].find("the JobSet and its status are kept") != std::string::npos);

  // An ended run is not stopped: the message says so.
  f.api.objects[tf]["status"]["conditions"] = {{{"type", "Succeeded"}, {"status", "True"}}};
  CHECK_THROWS_WITH_AS(f.kb.stop("tf"), doctest::Contains("has ended (Succeeded)"), Error);
}

TEST_CASE("kube backend: a Job that a JobSet made of a run is not listed as a run") {
  BackendFixture f;
  const json labels = {{"app.kubernetes.io/managed-by", "ktrain"}, {"ktrain.dev/run", "js"}};
  f.api.objects["/apis/batch/v1/namespaces/ml/jobs/js-node-0"] = {
      {"metadata",
       {{"name", "js-node-0"},
        {"uid", "u1"},
        {"labels", labels},
        {"ownerReferences", {{{"kind", "JobSet"}, {"name", "js"}, {"controller", true}}}}}}};
  json own = labels;
  own["ktrain.dev/run"] = "plain";
  f.api.objects["/apis/batch/v1/namespaces/ml/jobs/plain"] = {
      {"metadata", {{"name", "plain"}, {"uid", "u2"}, {"labels", own}}}};
  auto runs = f.kb.list({});
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].name == "plain");
}

TEST_CASE("kube backend: scale of an InferenceService: its own min/max, and the bad requests") {
  BackendFixture f;
  const std::string path = "/apis/serving.kserve.io/v1beta1/namespaces/ml/inferenceservices/api";
  f.api.objects[path] = {{"metadata", {{"name", "api"}}},
                         {"spec", {{"predictor", {{"minReplicas", 2}, {"maxReplicas", 4}}}}}};
  backend::ScaleRequest both{.name = "api", .replicas = 3, .min = 1};
  CHECK_THROWS_WITH_AS(f.kb.scale(both), doctest::Contains("not both"), UsageError);
  backend::ScaleRequest zero{.name = "api", .replicas = 0};
  CHECK_THROWS_WITH_AS(f.kb.scale(zero), doctest::Contains("'ktrain delete api' removes it"),
                       UsageError);
  backend::ScaleRequest above{.name = "api", .min = 6};
  CHECK_THROWS_WITH_AS(f.kb.scale(above), doctest::Contains("--min 6 would be more than"),
                       UsageError);
  CHECK(f.api.merges == 0);  // nothing changed by a refused request
  backend::ScaleRequest max{.name = "api", .max = 8};
  auto r = f.kb.scale(max);
  REQUIRE(r.changed.size() == 1);
  CHECK(r.changed[0] == "inferenceservice.serving.kserve.io/api scaled (min 2, max 8)");
  CHECK(f.api.objects[path]["spec"]["predictor"]["maxReplicas"] == 8);
  CHECK(f.api.objects[path]["spec"]["predictor"]["minReplicas"] == 2);
  backend::ScaleRequest none{.name = "nope", .replicas = 1};
  CHECK_THROWS_WITH_AS(f.kb.scale(none), doctest::Contains("\"nope\" not found"), Error);
}
