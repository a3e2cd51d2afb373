#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/client.h"
#include "kube_fakes.h"

using namespace ktrain;
using kube_test::FakeProcessRunner;
using kube_test::FakeTransport;
using kube_test::TestEnv;

namespace {

struct Fixture {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  kube::Client client{kube_test::token_config(), tr, t.env, runner};
};

}  // namespace

TEST_CASE("client: resource paths for core, group, namespaced and cluster-wide kinds") {
  using kube::collection_path;
  using kube::object_path;
  using kube::resource_type;
  CHECK(collection_path(resource_type("v1", "Pod"), "ml") == "/api/v1/namespaces/ml/pods");
  CHECK(collection_path(resource_type("batch/v1", "Job"), "") == "/apis/batch/v1/jobs");
  CHECK(object_path(resource_type("apps/v1", "Deployment"), "ml", "web", "scale") ==
        "/apis/apps/v1/namespaces/ml/deployments/web/scale");
  CHECK(object_path(resource_type("v1", "Namespace"), "ml", "ml") == "/api/v1/namespaces/ml");
  CHECK(collection_path(resource_type("scheduling.volcano.sh/v1beta1", "PodGroup"), "x") ==
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/x/podgroups");
  CHECK(resource_type("autoscaling/v2", "HorizontalPodAutoscaler").plural ==
        "horizontalpodautoscalers");
  CHECK(resource_type("example.com/v1", "Policy").plural == "policies");
  CHECK(resource_type("example.com/v1", "Ingress2").plural == "ingress2s");
  CHECK(kube::object_ref(resource_type("batch/v1", "Job"), "r") == "job.batch/r");
  CHECK(kube::object_ref(resource_type("v1", "Secret"), "r") == "secret/r");
}

TEST_CASE("client: requests carry the server, CA, TLS name, proxy and token") {
  Fixture f;
  f.tr.handler = [](const net::Request&) { return kube_test::json_response(200, {{"a", 1}}); };
  auto j = f.client.get("/api/v1/namespaces/ml/pods/p", {{"labelSelector", "a=b,c in (d)"}});
  CHECK(j["a"] == 1);
  REQUIRE(f.tr.requests.size() == 1);
  const auto& r = f.tr.requests[0];
  CHECK(r.method == "GET");
  CHECK(r.url ==
        "https://api.test:6443/api/v1/namespaces/ml/pods/p?labelSelector=a%3Db%2Cc%20in%20%28d%29");
  CHECK(r.tls.ca_pem == "CA PEM");
  CHECK(kube_test::header_of(r, "Authorization") == "Bearer s3cret");
  CHECK(kube_test::header_of(r, "Accept") == "application/json");
}

TEST_CASE("client: apply is a PATCH apply-patch+yaml with fieldManager=ktrain and force") {
  Fixture f;
  f.tr.handler = [](const net::Request& r) {
    return kube_test::json_response(200, nlohmann::json::parse(r.body));
  };
  nlohmann::ordered_json job = {{"apiVersion", "batch/v1"},
                                {"kind", "Job"},
                                {"metadata", {{"name", "r1"}}},
                                {"spec", {{"parallelism", 2}}}};
  auto out = f.client.apply(job, "ml");
  REQUIRE(f.tr.requests.size() == 1);
  const auto& r = f.tr.requests[0];
  CHECK(r.method == "PATCH");
  CHECK(kube_test::path_of(r.url) == "/apis/batch/v1/namespaces/ml/jobs/r1");
  CHECK(kube_test::query_param(r.url, "fieldManager") == "ktrain");
  CHECK(kube_test::query_param(r.url, "force") == "true");
  CHECK(kube_test::query_param(r.url, "dryRun").empty());
  CHECK(kube_test::header_of(r, "Content-Type") == "application/apply-patch+yaml");
  CHECK(net::is_idempotent(r));
  auto body = nlohmann::json::parse(r.body);
  CHECK(body["metadata"]["namespace"] == "ml");  // filled in
  CHECK(out["spec"]["parallelism"] == 2);

  kube::ApplyOptions dry;
  dry.dry_run = true;
  f.client.apply(job, "ml", dry);
  CHECK(kube_test::query_param(f.tr.requests[1].url, "dryRun") == "All");

  // An object's own namespace wins.
  job["metadata"]["namespace"] = "other";
  f.client.apply(job, "ml");
  CHECK(kube_test::path_of(f.tr.requests[2].url) == "/apis/batch/v1/namespaces/other/jobs/r1");

  CHECK_THROWS_AS(f.client.apply({{"kind", "Job"}}, "ml"), Error);
}

TEST_CASE("client: delete sends background propagation; 404 means it was already gone") {
  Fixture f;
  int n = 0;
  f.tr.handler = [&n](const net::Request&) {
    return n++ == 0 ? kube_test::json_response(200, {{"kind", "Status"}, {"status", "Success"}})
                    : kube_test::status_response(404, "NotFound", "jobs.batch \"r\" not found");
  };
  CHECK(f.client.remove("/apis/batch/v1/namespaces/ml/jobs/r"));
  CHECK_FALSE(f.client.remove("/apis/batch/v1/namespaces/ml/jobs/r"));
  const auto& r = f.tr.requests[0];
  CHECK(r.method == "DELETE");
  auto body = nlohmann::json::parse(r.body);
  CHECK(body["kind"] == "DeleteOptions");
  CHECK(body["propagationPolicy"] == "Background");
}

TEST_CASE("client: create POSTs and treats 409 AlreadyExists as done") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    return kube_test::status_response(409, "AlreadyExists", "secrets \"x\" already exists");
  };
  CHECK_FALSE(f.client.create("/api/v1/namespaces/ml/secrets", {{"kind", "Secret"}}).has_value());
  CHECK(f.tr.requests[0].method == "POST");
}

TEST_CASE("client: merge patch content type") {
  Fixture f;
  f.tr.handler = [](const net::Request&) { return kube_test::json_response(200, {{"ok", true}}); };
  f.client.merge_patch("/apis/apps/v1/namespaces/ml/deployments/web/scale",
                       {{"spec", {{"replicas", 3}}}});
  CHECK(kube_test::header_of(f.tr.requests[0], "Content-Type") == "application/merge-patch+json");
  CHECK(nlohmann::json::parse(f.tr.requests[0].body)["spec"]["replicas"] == 3);
}

TEST_CASE("client: list pages with limit and continue, one page at a time") {
  Fixture f;
  f.tr.handler = [](const net::Request& r) {
    const auto cont = kube_test::query_param(r.url, "continue");
    nlohmann::json page = {{"kind", "JobList"}, {"items", nlohmann::json::array()}};
    const int start = cont.empty() ? 0 : std::stoi(cont);
    for (int i = start; i < std::min(start + 2, 5); ++i) {
      page["items"].push_back(
          {{"metadata", {{"name", "j" + std::to_string(i)}, {"managedFields", {{{"big", "x"}}}}}}});
    }
    page["metadata"] = {{"resourceVersion", "77"}};
    if (start + 2 < 5) page["metadata"]["continue"] = std::to_string(start + 2);
    return kube_test::json_response(200, page);
  };
  kube::ListOptions lo;
  lo.label_selector = "app.kubernetes.io/managed-by=ktrain";
  lo.limit = 2;
  lo.drop_keys = {"managedFields"};
  std::vector<std::string> names;
  bool saw_managed = false;
  auto rv = f.client.list("/apis/batch/v1/namespaces/ml/jobs", lo, [&](nlohmann::json& item) {
    names.push_back(item["metadata"]["name"]);
    saw_managed = saw_managed || item["metadata"].contains("managedFields");
  });
  CHECK(names == std::vector<std::string>{"j0", "j1", "j2", "j3", "j4"});
  CHECK_FALSE(saw_managed);
  CHECK(rv == "77");
  REQUIRE(f.tr.requests.size() == 3);
  CHECK(kube_test::query_param(f.tr.requests[0].url, "limit") == "2");
  CHECK(kube_test::query_param(f.tr.requests[0].url, "labelSelector") ==
        "app.kubernetes.io%2Fmanaged-by%3Dktrain");
  CHECK(kube_test::query_param(f.tr.requests[0].url, "continue").empty());
  CHECK(kube_test::query_param(f.tr.requests[2].url, "continue") == "4");
}

TEST_CASE("client: an expired continue token (410) says to run again") {
  Fixture f;
  int n = 0;
  f.tr.handler = [&n](const net::Request&) {
    if (n++ == 0) {
      return kube_test::json_response(
          200, {{"items", nlohmann::json::array()}, {"metadata", {{"continue", "c1"}}}});
    }
    return kube_test::status_response(410, "Expired", "too old resource version");
  };
  CHECK_THROWS_WITH_AS(f.client.list("/api/v1/pods", {}, [](nlohmann::json&) {}),
                       doctest::Contains("run the command again"), Error);
}

TEST_CASE("client: metav1.Status errors: message, reason, causes and exit status 1") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    return kube_test::status_response(
        422, "Invalid", "Job.batch \"r\" is invalid: spec.parallelism: Invalid value: -1",
        {{{"field", "spec.parallelism"},
          {"message", "must be greater than or equal to 0"},
          {"reason", "FieldValueInvalid"}},
         {{"field", "spec.template"}, {"message", "required"}}});
  };
  try {
    f.client.get("/apis/batch/v1/namespaces/ml/jobs/r");
    FAIL("expected an error");
  } catch (const kube::ApiError& e) {
    CHECK(e.exit_status() == 1);
    CHECK(e.http_status() == 422);
    CHECK(e.reason() == "Invalid");
    const std::string m = e.what();
    CHECK(m.find("GET https://api.test:6443/apis/batch/v1/namespaces/ml/jobs/r: 422 "
                 "Unprocessable Entity: Job.batch \"r\" is invalid") == 0);
    CHECK(m.find("  - spec.parallelism: must be greater than or equal to 0") != std::string::npos);
    CHECK(m.find("  - spec.template: required") != std::string::npos);
    CHECK(m.find("s3cret") == std::string::npos);
  }
}

TEST_CASE("client: a 403 names the user and context, exit 3") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    return kube_test::status_response(
        403, "Forbidden",
        "jobs.batch \"r\" is forbidden: User \"alice\" cannot patch resource \"jobs\"");
  };
  try {
    f.client.get("/apis/batch/v1/namespaces/ml/jobs/r");
    FAIL("expected an error");
  } catch (const kube::ApiError& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("403 Forbidden: jobs.batch \"r\" is forbidden") !=
          std::string::npos);
    CHECK(std::string(e.what()).find("context 'test'") != std::string::npos);
  }
}

TEST_CASE("client: a non-Status error body is quoted") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    net::Response r;
    r.status = 502;
    r.body = "<html>bad gateway</html>\n";
    return r;
  };
  CHECK_THROWS_WITH_AS(f.client.get("/api/v1/pods"),
                       doctest::Contains("502 Bad Gateway: <html>bad gateway</html>"), Error);
}

TEST_CASE("client: failures below HTTP are plain words with exit status 3") {
  Fixture f;
  net::TransportFailure kind = net::TransportFailure::kConnect;
  f.tr.handler = [&kind](const net::Request&) {
    net::Response r;
    r.failure = kind;
    r.failure_message = "details";
    return r;
  };
  try {
    f.client.get("/api/v1/pods");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("cannot connect to the API server at https://api.test:6443") !=
          std::string::npos);
    CHECK(std::string(e.what()).find("context 'test'") != std::string::npos);
  }
  kind = net::TransportFailure::kTls;
  try {
    f.client.get("/api/v1/pods");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("TLS verification") != std::string::npos);
    CHECK(std::string(e.what()).find("certificate-authority") != std::string::npos);
  }
}

TEST_CASE("client: the server's URL is printed redacted, in every failure below HTTP") {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  auto cfg = kube_test::token_config();
  cfg.cluster.server = "https://admin:pa55word@api.test:6443/?access_token=t0ken&x=1";
  kube::Client client(cfg, tr, t.env, runner);
  for (auto kind : {net::TransportFailure::kConnect, net::TransportFailure::kResolve,
                    net::TransportFailure::kTls, net::TransportFailure::kTimeout,
                    net::TransportFailure::kDropped, net::TransportFailure::kOther}) {
    tr.handler = [kind](const net::Request&) {
      net::Response r;
      r.failure = kind;
      return r;
    };
    try {
      client.get("/version");
      FAIL("expected an error");
    } catch (const Error& e) {
      const std::string m = e.what();
      CAPTURE(m);
      CHECK(m.find("pa55word") == std::string::npos);
      CHECK(m.find("t0ken") == std::string::npos);
      CHECK(m.find("admin") == std::string::npos);
    }
  }
  tr.handler = [](const net::Request&) {
    net::Response r;
    r.failure = net::TransportFailure::kConnect;
    return r;
  };
  CHECK_THROWS_WITH_AS(
      client.get("/version"),
      doctest::Contains("cannot connect to the API server at "
                        "https://REDACTED@api.test:6443/?access_token=REDACTED&x=1 "
                        "of context 'test'"),
      Error);
}

TEST_CASE("client: an answer that is not JSON is described without quoting it") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    net::Response r;
    r.status = 200;
    r.body = R"({"kind":"Secret","data":{"password":"cGE1NXdvcmQ=)";
    return r;
  };
  try {
    f.client.get("/api/v1/namespaces/ml/secrets/s");
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("the API server answered with something that is not JSON (parse error at ") !=
          std::string::npos);
    CHECK(m.find("cGE1") == std::string::npos);
  }
}

TEST_CASE("client: get_if_exists is nullopt on 404 and throws on other errors") {
  Fixture f;
  int status = 404;
  f.tr.handler = [&status](const net::Request&) {
    return kube_test::status_response(status, "NotFound", "nope");
  };
  CHECK_FALSE(f.client.get_if_exists("/api/v1/namespaces/ml/pods/x").has_value());
  status = 500;
  CHECK_THROWS_AS(f.client.get_if_exists("/api/v1/namespaces/ml/pods/x"), kube::ApiError);
}

TEST_CASE("client: stream_lines splits chunks into lines and stops when asked") {
  Fixture f;
  f.tr.handler = [](const net::Request&) {
    net::Response r;
    r.status = 200;
    r.body = "one\ntwo\nthree\nfour";
    return r;
  };
  std::vector<std::string> lines;
  f.client.stream_lines("/api/v1/namespaces/ml/pods/p/log", {{"follow", "true"}},
                        [&](std::string_view l) {
                          lines.emplace_back(l);
                          return true;
                        });
  CHECK(lines == std::vector<std::string>{"one", "two", "three", "four"});
  lines.clear();
  f.client.stream_lines("/x", {}, [&](std::string_view l) {
    lines.emplace_back(l);
    return lines.size() < 2;
  });
  CHECK(lines.size() == 2);
}

TEST_CASE("client: the API server's Warning headers are shown once each, as kubectl shows them") {
  using kube::parse_warning_header;
  CHECK(parse_warning_header(R"(299 - "would violate PodSecurity \"restricted:latest\"")") ==
        std::vector<std::string>{R"(would violate PodSecurity "restricted:latest")"});
  CHECK(parse_warning_header(
            R"(299 - "one", 299 kube-apiserver "two" "Tue, 01 Dec 2026 10:00:00 GMT")") ==
        std::vector<std::string>{"one", "two"});
  CHECK(parse_warning_header(R"(199 - "miscellaneous")").empty());  // not an API warning
  CHECK(parse_warning_header(R"(299 - "unterminated)").empty());
  CHECK(parse_warning_header("299 -").empty());
  CHECK(parse_warning_header("").empty());
  CHECK(parse_warning_header(R"(299 - "kept", garbage)") == std::vector<std::string>{"kept"});

  Fixture f;
  f.tr.handler = [](const net::Request&) {
    auto r = kube_test::json_response(201, {{"kind", "Job"}});
    r.headers.emplace_back("warning", R"(299 - "batch/v1beta1 is deprecated")");
    r.headers.emplace_back("Warning", R"(299 - "would violate PodSecurity")");
    return r;
  };
  f.client.get("/apis/batch/v1/namespaces/ml/jobs/a");
  f.client.get("/apis/batch/v1/namespaces/ml/jobs/b");  // the same warnings: not again
  CHECK(f.t.err.str() ==
        "ktrain: warning: the API server warns: batch/v1beta1 is deprecated\n"
        "ktrain: warning: the API server warns: would violate PodSecurity\n");
  f.t.env.global.quiet = true;
  f.tr.handler = [](const net::Request&) {
    auto r = kube_test::json_response(200, {{"kind", "Job"}});
    r.headers.emplace_back("Warning", R"(299 - "another")");
    return r;
  };
  f.client.get("/apis/batch/v1/namespaces/ml/jobs/c");
  CHECK(f.t.err.str().find("another") == std::string::npos);  // --quiet
}
