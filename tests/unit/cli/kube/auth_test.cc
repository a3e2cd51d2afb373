#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/auth.h"
#include "kube/client.h"
#include "kube_fakes.h"

using namespace ktrain;
using kube_test::FakeProcessRunner;
using kube_test::FakeTransport;
using kube_test::TestEnv;

namespace {

std::string exec_output(const std::string& api_version, const std::string& token,
                        const std::string& expires = "") {
  nlohmann::json j = {
      {"apiVersion", api_version}, {"kind", "ExecCredential"}, {"status", {{"token", token}}}};
  if (!expires.empty()) j["status"]["expirationTimestamp"] = expires;
  return j.dump();
}

kube::ClientConfig exec_config(const std::string& api_version) {
  auto c = kube_test::token_config("");
  kube::ExecConfig x;
  x.api_version = api_version;
  x.command = "get-token";
  x.args = {"--cluster", "prod"};
  x.env = {{"REGION", "eu"}};
  x.install_hint = "Install it with: apt install get-token";
  c.user.exec = x;
  return c;
}

std::string auth_header(const net::Request& r) {
  return kube_test::header_of(r, "Authorization");
}

}  // namespace

TEST_CASE("auth: a bearer token becomes an Authorization header") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("abc");
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  creds.apply(r);
  CHECK(auth_header(r) == "Bearer abc");
  CHECK_FALSE(creds.invalidate());  // a fixed token cannot get better by asking again
}

TEST_CASE("auth: a token file is read (trimmed) and re-read after a 401") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.token_file = "/tok";
  t.fs.files["/tok"] = "first\n";
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r1;
  creds.apply(r1);
  CHECK(auth_header(r1) == "Bearer first");
  t.fs.files["/tok"] = "second";
  net::Request r2;
  creds.apply(r2);
  CHECK(auth_header(r2) == "Bearer first");  // cached
  CHECK(creds.invalidate());
  net::Request r3;
  creds.apply(r3);
  CHECK(auth_header(r3) == "Bearer second");
}

TEST_CASE("auth: a missing token file is exit 3 naming the user") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.token_file = "/gone";
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  try {
    creds.apply(r);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("user 'alice'") != std::string::npos);
  }
}

TEST_CASE("auth: a token file or exec token with a line break inside is refused, unquoted") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.token_file = "/tok";
  t.fs.files["/tok"] = "abc.s3cr3t\r\nX-Injected: 1\n";
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  try {
    creds.apply(r);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "the token file /tok of user 'alice' in kubeconfig /home/u/.kube/config holds a line "
          "break (CR or LF) or NUL inside the token, which cannot go in an HTTP header; write "
          "the token on one line");
    CHECK(e.exit_status() == 3);
  }
  CHECK(auth_header(r).empty());

  auto xcfg = exec_config("client.authentication.k8s.io/v1");
  runner.results = {{0, exec_output("client.authentication.k8s.io/v1", "abc.s3cr3t\nX: 1"), ""}};
  kube::Credentials xcreds(xcfg, t.env, runner);
  net::Request xr;
  try {
    xcreds.apply(xr);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("the exec credential plugin 'get-token' of user 'alice' in kubeconfig "
                 "/home/u/.kube/config returned a token that holds a line break") == 0);
    CHECK(m.find("s3cr3t") == std::string::npos);
  }
  CHECK(auth_header(xr).empty());
}

TEST_CASE("auth: client certificate and key from files or data go to the TLS settings") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.client_cert_file = "/c.crt";
  cfg.user.client_key_pem = "KEY DATA";
  t.fs.files["/c.crt"] = "CERT FILE";
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  creds.apply(r);
  CHECK(r.tls.client_cert_pem == "CERT FILE");
  CHECK(r.tls.client_key_pem == "KEY DATA");
  CHECK(auth_header(r).empty());
  CHECK(creds.kind() == "client certificate");

  cfg.user.client_key_pem.clear();
  CHECK_THROWS_WITH_AS(kube::Credentials(cfg, t.env, runner), doctest::Contains("without a key"),
                       Error);
}

TEST_CASE("auth: username and password become basic auth") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.username = "admin";
  cfg.user.password = "pw";
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  creds.apply(r);
  CHECK(auth_header(r) == "Basic YWRtaW46cHc=");
}

TEST_CASE("auth: auth-provider is refused with a pointer to exec plugins") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = kube_test::token_config("");
  cfg.user.auth_provider = "gcp";
  try {
    kube::Credentials creds(cfg, t.env, runner);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 3);
    const std::string m = e.what();
    CHECK(m.find("auth-provider 'gcp'") != std::string::npos);
    CHECK(m.find("exec credential plugin") != std::string::npos);
    CHECK(m.find("gke-gcloud-auth-plugin") != std::string::npos);
  }
}

TEST_CASE("auth: exec v1 runs the plugin with args, env and KUBERNETES_EXEC_INFO") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = exec_config("client.authentication.k8s.io/v1");
  cfg.user.exec->provide_cluster_info = true;
  cfg.cluster.tls_server_name = "k8s.internal";
  runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1", "tok-1"), ""});
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  creds.apply(r);
  CHECK(auth_header(r) == "Bearer tok-1");
  REQUIRE(runner.calls.size() == 1);
  CHECK(runner.calls[0].argv == std::vector<std::string>{"get-token", "--cluster", "prod"});
  CHECK(runner.calls[0].env.at("REGION") == "eu");
  CHECK(runner.calls[0].env.at("PATH") == "/usr/bin:/bin");  // the process env is passed on
  auto info = nlohmann::json::parse(runner.calls[0].env.at("KUBERNETES_EXEC_INFO"));
  CHECK(info["apiVersion"] == "client.authentication.k8s.io/v1");
  CHECK(info["kind"] == "ExecCredential");
  CHECK(info["spec"]["interactive"] == false);
  CHECK(info["spec"]["cluster"]["server"] == "https://api.test:6443");
  CHECK(info["spec"]["cluster"]["tls-server-name"] == "k8s.internal");
  CHECK(info["spec"]["cluster"]["certificate-authority-data"] == kube::base64_encode("CA PEM"));
}

TEST_CASE("auth: exec v1beta1 without provideClusterInfo gives no cluster, and caches") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = exec_config("client.authentication.k8s.io/v1beta1");
  runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1beta1", "b1"), ""});
  kube::Credentials creds(cfg, t.env, runner);
  for (int i = 0; i < 3; ++i) {
    net::Request r;
    creds.apply(r);
    CHECK(auth_header(r) == "Bearer b1");
  }
  CHECK(runner.calls.size() == 1);  // no expiry: cached for the process
  auto info = nlohmann::json::parse(runner.calls[0].env.at("KUBERNETES_EXEC_INFO"));
  CHECK_FALSE(info["spec"].contains("cluster"));
}

TEST_CASE("auth: exec credentials are cached until expirationTimestamp, then re-run") {
  TestEnv t;  // the fake clock starts at 2027-01-15T08:00:00Z
  FakeProcessRunner runner;
  auto cfg = exec_config("client.authentication.k8s.io/v1");
  runner.results.push_back(
      {0, exec_output("client.authentication.k8s.io/v1", "early", "2027-01-15T08:10:00Z"), ""});
  runner.results.push_back(
      {0, exec_output("client.authentication.k8s.io/v1", "later", "2027-01-15T09:00:00Z"), ""});
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r1;
  creds.apply(r1);
  CHECK(auth_header(r1) == "Bearer early");
  t.clock.sleep_for(std::chrono::minutes(9));
  net::Request r2;
  creds.apply(r2);
  CHECK(auth_header(r2) == "Bearer early");
  CHECK(runner.calls.size() == 1);
  t.clock.sleep_for(std::chrono::minutes(2));
  net::Request r3;
  creds.apply(r3);
  CHECK(auth_header(r3) == "Bearer later");
  CHECK(runner.calls.size() == 2);
}

TEST_CASE("auth: exec client certificate output goes to TLS") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = exec_config("client.authentication.k8s.io/v1");
  nlohmann::json out = {{"apiVersion", "client.authentication.k8s.io/v1"},
                        {"kind", "ExecCredential"},
                        {"status", {{"clientCertificateData", "C"}, {"clientKeyData", "K"}}}};
  runner.results.push_back({0, out.dump(), ""});
  kube::Credentials creds(cfg, t.env, runner);
  net::Request r;
  creds.apply(r);
  CHECK(r.tls.client_cert_pem == "C");
  CHECK(r.tls.client_key_pem == "K");
  CHECK(auth_header(r).empty());
}

TEST_CASE("auth: exec plugin failures are exit 3 with the plugin's stderr passed through") {
  TestEnv t;
  FakeProcessRunner runner;
  auto cfg = exec_config("client.authentication.k8s.io/v1");

  SUBCASE("missing command shows the installHint") {
    runner.not_found = true;
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    try {
      creds.apply(r);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_status() == 3);
      CHECK(std::string(e.what()).find("apt install get-token") != std::string::npos);
      CHECK(std::string(e.what()).find("not found") != std::string::npos);
    }
  }
  SUBCASE("non-zero exit") {
    runner.results.push_back({2, "", "token expired, run 'login'\n"});
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    CHECK_THROWS_WITH_AS(creds.apply(r), doctest::Contains("exit status 2"), Error);
    CHECK(t.err.str() == "token expired, run 'login'\n");
  }
  SUBCASE("not JSON") {
    runner.results.push_back({0, "hello", ""});
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    CHECK_THROWS_WITH_AS(creds.apply(r), doctest::Contains("ExecCredential"), Error);
  }
  SUBCASE("wrong apiVersion") {
    runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1beta1", "x"), ""});
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    CHECK_THROWS_WITH_AS(creds.apply(r), doctest::Contains("returned apiVersion"), Error);
  }
  SUBCASE("unsupported apiVersion in the kubeconfig") {
    cfg.user.exec->api_version = "client.authentication.k8s.io/v1alpha1";
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    CHECK_THROWS_WITH_AS(creds.apply(r), doctest::Contains("v1alpha1"), Error);
  }
  SUBCASE("bad expirationTimestamp") {
    runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1", "x", "soon"), ""});
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    CHECK_THROWS_WITH_AS(creds.apply(r), doctest::Contains("expirationTimestamp"), Error);
  }
}

TEST_CASE("auth: on 401 the client re-runs the exec plugin once and retries") {
  TestEnv t;
  FakeProcessRunner runner;
  runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1", "stale"), ""});
  runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1", "fresh"), ""});
  FakeTransport tr;
  tr.handler = [](const net::Request& r) {
    if (auth_header(r) == "Bearer fresh") return kube_test::json_response(200, {{"kind", "Pod"}});
    return kube_test::status_response(401, "Unauthorized", "Unauthorized");
  };
  kube::Client client(exec_config("client.authentication.k8s.io/v1"), tr, t.env, runner);
  auto pod = client.get("/api/v1/namespaces/ml/pods/p");
  CHECK(pod["kind"] == "Pod");
  CHECK(runner.calls.size() == 2);
  CHECK(tr.requests.size() == 2);
}

TEST_CASE("auth: a second 401 is reported naming the user and kubeconfig, exit 3, once only") {
  TestEnv t;
  FakeProcessRunner runner;
  runner.results.push_back({0, exec_output("client.authentication.k8s.io/v1", "bad"), ""});
  FakeTransport tr;
  tr.handler = [](const net::Request&) {
    return kube_test::status_response(401, "Unauthorized", "Unauthorized");
  };
  kube::Client client(exec_config("client.authentication.k8s.io/v1"), tr, t.env, runner);
  try {
    client.get("/api/v1/namespaces/ml/pods/p");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 3);
    const std::string m = e.what();
    CHECK(m.find("rejected the credentials of user 'alice'") != std::string::npos);
    CHECK(m.find("/home/u/.kube/config") != std::string::npos);
  }
  CHECK(tr.requests.size() == 2);
  CHECK(runner.calls.size() == 2);
}

TEST_CASE("auth: with a fixed token, a 401 is not retried") {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  tr.handler = [](const net::Request&) {
    return kube_test::status_response(401, "Unauthorized", "Unauthorized");
  };
  kube::Client client(kube_test::token_config(), tr, t.env, runner);
  CHECK_THROWS_AS(client.get("/api/v1/pods"), kube::ApiError);
  CHECK(tr.requests.size() == 1);
}

TEST_CASE("auth: an ExecCredential with fields of the wrong type is exit 3, not a JSON crash") {
  // Found while fuzzing (exec_credential's siblings): nlohmann's value() threw type_error.
  for (const std::string out :
       {R"({"kind":5})", R"({"kind":"ExecCredential","apiVersion":[]})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":7})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",)"
        R"("status":{"token":{}}})"}) {
    TestEnv t;
    FakeProcessRunner runner;
    runner.results.push_back({0, out, ""});
    auto cfg = exec_config("client.authentication.k8s.io/v1");
    kube::Credentials creds(cfg, t.env, runner);
    net::Request r;
    try {
      creds.apply(r);
      FAIL("expected an error for " << out);
    } catch (const Error& e) {
      CHECK(e.exit_status() == 3);
    }
  }
}
