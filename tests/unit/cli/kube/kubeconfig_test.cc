#include <doctest/doctest.h>

#include "kube/kubeconfig.h"
#include "kube_fakes.h"

using ktrain::kube::load_client_config;
using ktrain::kube_test::TestEnv;

namespace {

const char* kConfigA = R"(apiVersion: v1
kind: Config
current-context: a-ctx
clusters:
- name: shared
  cluster:
    server: https://a.example:6443
    certificate-authority: certs/ca.crt
- name: only-a
  cluster:
    server: https://only-a:6443
    insecure-skip-tls-verify: true
users:
- name: alice
  user:
    token: token-from-a
contexts:
- name: a-ctx
  context: {cluster: shared, user: alice, namespace: team-a}
)";

const char* kConfigB = R"(apiVersion: v1
kind: Config
current-context: b-ctx
clusters:
- name: shared
  cluster:
    server: https://b.example:6443
- name: only-b
  cluster:
    server: https://only-b:6443
    certificate-authority-data: UEVNIERBVEE=
    tls-server-name: kubernetes.internal
    proxy-url: http://proxy:3128
users:
- name: alice
  user:
    token: token-from-b
- name: bob
  user:
    client-certificate: bob.crt
    client-key: /abs/bob.key
contexts:
- name: b-ctx
  context: {cluster: only-b, user: bob}
- name: a-ctx
  context: {cluster: only-b, user: bob, namespace: from-b}
)";

}  // namespace

TEST_CASE("kubeconfig: --kubeconfig reads that file, its current context and namespace") {
  TestEnv t;
  t.fs.files["/cfg/a.yaml"] = kConfigA;
  t.env.global.kubeconfig = "/cfg/a.yaml";
  auto c = load_client_config(t.env);
  CHECK(c.context_name == "a-ctx");
  CHECK(c.cluster.server == "https://a.example:6443");
  CHECK(c.cluster.ca_file == "/cfg/certs/ca.crt");  // relative to the file's folder
  CHECK(c.user.token == "token-from-a");
  CHECK(c.namespace_ == "team-a");
  CHECK(c.source == "kubeconfig /cfg/a.yaml");
}

TEST_CASE("kubeconfig: KUBECONFIG merges files, the first file that sets a name wins") {
  TestEnv t;
  t.fs.files["/cfg/a.yaml"] = kConfigA;
  t.fs.files["/cfg/b.yaml"] = kConfigB;
  t.env.vars["KUBECONFIG"] = "/cfg/missing.yaml:/cfg/a.yaml:/cfg/b.yaml";
  auto c = load_client_config(t.env);
  // current-context from a; context a-ctx from a (b's a-ctx loses); cluster shared from a.
  CHECK(c.context_name == "a-ctx");
  CHECK(c.namespace_ == "team-a");
  CHECK(c.cluster.server == "https://a.example:6443");
  CHECK(c.user.token == "token-from-a");
  CHECK(c.source == "kubeconfig /cfg/a.yaml:/cfg/b.yaml");

  // A context only in b, with entries only in b, resolves paths against b's folder.
  t.env.global.context = "b-ctx";
  c = load_client_config(t.env);
  CHECK(c.cluster.server == "https://only-b:6443");
  CHECK(c.cluster.ca_pem == "PEM DATA");
  CHECK(c.cluster.tls_server_name == "kubernetes.internal");
  CHECK(c.cluster.proxy_url == "http://proxy:3128");
  CHECK(c.user.client_cert_file == "/cfg/bob.crt");
  CHECK(c.user.client_key_file == "/abs/bob.key");
  CHECK(c.namespace_ == "default");
}

TEST_CASE("kubeconfig: reversed KUBECONFIG order flips which entries win") {
  TestEnv t;
  t.fs.files["/cfg/a.yaml"] = kConfigA;
  t.fs.files["/cfg/b.yaml"] = kConfigB;
  t.env.vars["KUBECONFIG"] = "/cfg/b.yaml:/cfg/a.yaml";
  auto c = load_client_config(t.env);
  CHECK(c.context_name == "b-ctx");
  t.env.global.context = "a-ctx";
  c = load_client_config(t.env);
  CHECK(c.namespace_ == "from-b");
  CHECK(c.user_name == "bob");
}

TEST_CASE("kubeconfig: ~/.kube/config is the default, and -n overrides the namespace") {
  TestEnv t;
  t.fs.files["/home/u/.kube/config"] = kConfigA;
  t.env.global.namespace_ = "override";
  auto c = load_client_config(t.env);
  CHECK(c.cluster.server == "https://a.example:6443");
  CHECK(c.namespace_ == "override");
  CHECK(c.cluster.ca_file == "/home/u/.kube/certs/ca.crt");
}

TEST_CASE("kubeconfig: an unknown --context is a usage error that lists the contexts") {
  TestEnv t;
  t.fs.files["/home/u/.kube/config"] = kConfigA;
  t.env.global.context = "nope";
  try {
    load_client_config(t.env);
    FAIL("expected an error");
  } catch (const ktrain::Error& e) {
    CHECK(e.exit_status() == 2);
    CHECK(std::string(e.what()).find("a-ctx") != std::string::npos);
  }
}

TEST_CASE("kubeconfig: a context naming a missing cluster or user is exit 3 naming the file") {
  TestEnv t;
  t.fs.files["/k"] = R"(current-context: c
contexts: [{name: c, context: {cluster: gone, user: u}}]
clusters: []
users: [{name: u, user: {token: x}}]
)";
  t.env.global.kubeconfig = "/k";
  try {
    load_client_config(t.env);
    FAIL("expected an error");
  } catch (const ktrain::Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("cluster 'gone'") != std::string::npos);
    CHECK(std::string(e.what()).find("/k") != std::string::npos);
  }
}

TEST_CASE("kubeconfig: a missing --kubeconfig file and invalid YAML are clear errors") {
  TestEnv t;
  t.env.global.kubeconfig = "/nope";
  CHECK_THROWS_WITH_AS(load_client_config(t.env), doctest::Contains("/nope does not exist"),
                       ktrain::Error);
  t.fs.files["/bad"] = "clusters: [\n  - {";
  t.env.global.kubeconfig = "/bad";
  CHECK_THROWS_WITH_AS(load_client_config(t.env), doctest::Contains("not valid YAML"),
                       ktrain::Error);
}

TEST_CASE("kubeconfig: a token with a line break is refused naming the file and user, not it") {
  // "\r\nX-Injected: 1" would reach the server as a header of its own.
  for (const char* token : {R"("abc.s3cr3t\r\nX-Injected: 1")", R"("abc.s3cr3t\nX: 1")",
                            R"("abc.s3cr3t\0")", "|\n      abc.s3cr3t\n      X-Injected: 1"}) {
    CAPTURE(token);
    TestEnv t;
    t.fs.files["/cfg/k.yaml"] = std::string(R"(current-context: c
clusters: [{name: cl, cluster: {server: "https://k.example:6443"}}]
contexts: [{name: c, context: {cluster: cl, user: mallory}}]
users:
- name: mallory
  user:
    token: )") + token + "\n";
    t.env.global.kubeconfig = "/cfg/k.yaml";
    try {
      load_client_config(t.env);
      FAIL("expected an error");
    } catch (const ktrain::Error& e) {
      const std::string m = e.what();
      CHECK(m ==
            "user 'mallory' in kubeconfig /cfg/k.yaml: its token holds a line break (CR or LF) "
            "or NUL, which cannot go in an HTTP header; write the token on one line");
      CHECK(e.exit_status() == 3);
    }
  }
}

TEST_CASE("kubeconfig: no current-context and no --context is an error listing contexts") {
  TestEnv t;
  t.fs.files["/k"] = "contexts: [{name: c1, context: {cluster: x}}]\n";
  t.env.global.kubeconfig = "/k";
  CHECK_THROWS_WITH_AS(load_client_config(t.env), doctest::Contains("no current-context"),
                       ktrain::Error);
}

TEST_CASE("kubeconfig: user fields: tokenFile, data, basic auth, exec, auth-provider") {
  TestEnv t;
  t.fs.files["/cfg/k"] = R"(current-context: c
clusters: [{name: cl, cluster: {server: "https://s:1"}}]
contexts: [{name: c, context: {cluster: cl, user: u}}]
users:
- name: u
  user:
    tokenFile: tok
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
    username: admin
    password: pw
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, prod]
      env: [{name: REGION, value: eu}]
      installHint: install get-token
      provideClusterInfo: true
      interactiveMode: Never
    auth-provider:
      name: gcp
)";
  t.env.global.kubeconfig = "/cfg/k";
  auto c = load_client_config(t.env);
  CHECK(c.user.token_file == "/cfg/tok");
  CHECK(c.user.client_cert_pem == "CERT");
  CHECK(c.user.client_key_pem == "KEY");
  CHECK(c.user.username == "admin");
  CHECK(c.user.password == "pw");
  REQUIRE(c.user.exec);
  CHECK(c.user.exec->command == "/cfg/./bin/get-token");
  CHECK(c.user.exec->args == std::vector<std::string>{"--cluster", "prod"});
  CHECK(c.user.exec->env.at(0) == std::make_pair(std::string("REGION"), std::string("eu")));
  CHECK(c.user.exec->provide_cluster_info);
  CHECK(c.user.exec->install_hint == "install get-token");
  CHECK(c.user.auth_provider == "gcp");
}

TEST_CASE("kubeconfig: exec.args that are not strings are refused, naming the user and index") {
  TestEnv t;
  t.fs.files["/cfg/k"] = R"(current-context: c
clusters: [{name: cl, cluster: {server: "https://s:1"}}]
contexts: [{name: c, context: {cluster: cl, user: u}}]
users:
- name: u
  user:
    exec:
      command: get-token
      args: [--cluster, {prod: 1}]
)";
  t.env.global.kubeconfig = "/cfg/k";
  CHECK_THROWS_WITH_AS(load_client_config(t.env),
                       "user 'u' in kubeconfig /cfg/k: exec.args[1] must be a string",
                       ktrain::Error);
  t.fs.files["/cfg/k"].replace(t.fs.files["/cfg/k"].find("{prod: 1}"), 9, "[a, b]");
  CHECK_THROWS_WITH_AS(load_client_config(t.env), doctest::Contains("exec.args[1]"), ktrain::Error);
}

TEST_CASE("kubeconfig: in-cluster config when no kubeconfig exists") {
  TestEnv t;
  t.env.vars["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  t.env.vars["KUBERNETES_SERVICE_PORT"] = "443";
  t.fs.files["/sa/token"] = "sa-token\n";
  t.fs.files["/sa/ca.crt"] = "CA";
  t.fs.files["/sa/namespace"] = "jobs\n";
  ktrain::kube::LoadOptions o;
  o.service_account_dir = "/sa";
  auto c = load_client_config(t.env, o);
  CHECK(c.in_cluster);
  CHECK(c.cluster.server == "https://10.0.0.1:443");
  CHECK(c.cluster.ca_file == "/sa/ca.crt");
  CHECK(c.user.token_file == "/sa/token");
  CHECK(c.namespace_ == "jobs");

  // A kubeconfig, when there is one, wins over the in-cluster config.
  t.fs.files["/home/u/.kube/config"] = kConfigA;
  CHECK_FALSE(load_client_config(t.env, o).in_cluster);
}

TEST_CASE("kubeconfig: IPv6 service host is bracketed") {
  TestEnv t;
  t.env.vars["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  t.env.vars["KUBERNETES_SERVICE_PORT"] = "443";
  t.fs.files["/sa/token"] = "x";
  auto c = ktrain::kube::load_in_cluster_config(t.env, "/sa");
  REQUIRE(c);
  CHECK(c->cluster.server == "https://[fd00::1]:443");
  CHECK(c->namespace_ == "default");
}

TEST_CASE("kubeconfig: nothing configured is exit 3 and says where it looked") {
  TestEnv t;
  try {
    load_client_config(t.env);
    FAIL("expected an error");
  } catch (const ktrain::Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()).find("~/.kube/config") != std::string::npos);
    CHECK(std::string(e.what()).find("KUBERNETES_SERVICE_HOST") != std::string::npos);
  }
}

TEST_CASE("kubeconfig: base64 round trip and invalid input") {
  using ktrain::kube::base64_decode;
  using ktrain::kube::base64_encode;
  for (std::string s : {"", "a", "ab", "abc", "abcd", "hello world\n"}) {
    CHECK(base64_decode(base64_encode(s)) == s);
  }
  CHECK(base64_encode("ab") == "YWI=");
  CHECK(base64_decode("YW\nI=") == "ab");
  CHECK_THROWS_AS(base64_decode("a*b"), ktrain::Error);
}

TEST_CASE(
    "kubeconfig: a named entry without its cluster/user/context map is an error, not a crash") {
  // Found by tests/fuzz (kubeconfig): yaml-cpp threw InvalidNode when the missing map
  // was copied.
  for (const char* text : {
           "current-context: c\ncontexts: [{name: c}]\nclusters: [{name: x}]\n",
           "current-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n"
           "clusters: [{name: x}]\nusers: [{name: u}]\n",
       }) {
    TestEnv t;
    t.fs.files["/cfg/k"] = text;
    t.env.global.kubeconfig = "/cfg/k";
    CHECK_THROWS_AS(load_client_config(t.env), ktrain::Error);
  }
}
