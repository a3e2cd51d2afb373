// The cluster client and KubeBackend against the test API server
// (tests/fixtures/apiserver), over real TLS with libcurl: the auth matrix, retries,
// idempotent submit, status explanations and delete. Skipped when the server has
// not been built.

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backend/kube_backend.h"
#include "cmd/scale.h"
#include "cmd/serve.h"
#include "kube/connection.h"
#include "net/curl_transport.h"

using namespace ktrain;
using nlohmann::json;

namespace {

/// The server beside the tests, or $KTRAIN_TEST_APISERVER.
const std::string kServerPath = [] {
  const char* over = std::getenv("KTRAIN_TEST_APISERVER");
  return over && *over ? std::string(over)
                       : std::string(KTRAIN_BINARY_DIR) + "/ktrain-test-apiserver";
}();

void write(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// One test API server process in a fresh folder.
class TestServer {
 public:
  explicit TestServer(const std::string& script = "") {
    char tmpl[] = "/tmp/ktrain-kube-it-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::vector<std::string> args = {kServerPath, "--dir", dir, "--threads", "8"};
    if (!script.empty()) {
      write(dir + "/script.yaml", script);
      args.push_back("--script");
      args.push_back(dir + "/script.yaml");
    }
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    ::close(fds[1]);
    FILE* f = ::fdopen(fds[0], "r");
    char line[128] = {0};
    if (std::fgets(line, sizeof line, f)) std::sscanf(line, "ready %d", &port);
    std::fclose(f);
    REQUIRE_MESSAGE(port > 0, "the test API server did not start");
    server = "https://127.0.0.1:" + std::to_string(port);
  }
  ~TestServer() {
    transport_.reset();  // close the admin connection first: the server waits for open ones
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  /// A /_test/ admin request.
  json admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    net::Request r;
    r.method = method;
    r.url = server + path;
    r.tls.ca_file = dir + "/ca.crt";
    if (!body.is_null()) {
      r.body = body.dump();
      r.headers.emplace_back("Content-Type", "application/json");
    }
    auto resp = transport_->perform(r);
    REQUIRE(resp.status == 200);
    return json::parse(resp.body);
  }

  std::string dir;
  std::string server;
  int port = 0;

 private:
  pid_t pid_ = -1;
  std::unique_ptr<net::CurlTransport> transport_ = std::make_unique<net::CurlTransport>();
};

/// A real Env (real files and clock) whose kubeconfig comes only from what a test sets.
struct RealEnv {
  std::ostringstream out, err;
  std::istringstream in;
  Env env;
  explicit RealEnv(const std::string& home) {
    env = make_real_env();
    env.vars.clear();
    env.vars["HOME"] = home;
    env.vars["PATH"] = "/usr/bin:/bin";
    env.in = &in;
    env.out = &out;
    env.err = &err;
  }
};

project::Project project_named(const std::string& name, int nodes = 2) {
  project::Project p;
  p.file = "ktrain.yaml";
  p.directory = "/tmp";
  p.name = name;
  p.image.ref = "registry.test/train:1";
  project::Train t;
  t.command = {"python", "train.py"};
  t.nodes = nodes;
  t.gpus = 1;
  p.train = t;
  return p;
}

/// Lists jobs through a fresh connection made from `env`; rethrows what it throws.
size_t list_jobs(Env& env) {
  backend::KubeBackend kb(std::make_unique<kube::Connection>(env), env);
  return kb.list({}).size();
}

bool have_server() {
  if (::access(kServerPath.c_str(), X_OK) == 0) return true;
  MESSAGE("skipped: " << kServerPath << " is not built");
  return false;
}

}  // namespace

TEST_CASE(
    "apiserver: auth matrix: token, client cert, embedded data, token file, merged KUBECONFIG") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir);
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  CHECK(list_jobs(e.env) == 0);  // token (current context)
  e.env.global.context = "cert";
  CHECK(list_jobs(e.env) == 0);
  e.env.global.kubeconfig = s.dir + "/kubeconfig-embedded";
  CHECK(list_jobs(e.env) == 0);
  e.env.global.context.clear();
  CHECK(list_jobs(e.env) == 0);

  // tokenFile, relative to the kubeconfig's folder.
  write(s.dir + "/kc-tokenfile",
        "current-context: c\nclusters:\n- name: t\n  cluster:\n    server: " + s.server +
            "\n    certificate-authority: ca.crt\n"
            "users:\n- name: u\n  user:\n    tokenFile: token\n"
            "contexts:\n- name: c\n  context: {cluster: t, user: u}\n");
  e.env.global.kubeconfig = s.dir + "/kc-tokenfile";
  CHECK(list_jobs(e.env) == 0);

  // Merged KUBECONFIG: the first file holds only the current context; the second the rest.
  write(s.dir + "/kc-first", "current-context: cert\n");
  e.env.global.kubeconfig.clear();
  e.env.vars["KUBECONFIG"] = s.dir + "/kc-first:" + s.dir + "/kubeconfig";
  auto cfg = kube::load_client_config(e.env);
  CHECK(cfg.user_name == "cert-user");
  CHECK(list_jobs(e.env) == 0);
}

TEST_CASE("apiserver: auth matrix: exec plugins v1 and v1beta1, re-run once after a 401") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir);
  const std::string token = slurp(s.dir + "/token").substr(0, 40);
  for (const std::string version : {"v1", "v1beta1"}) {
    CAPTURE(version);
    const std::string api = "client.authentication.k8s.io/" + version;
    // The plugin's first answer is a stale token, later ones the good one.
    const std::string count = s.dir + "/count-" + version;
    write(s.dir + "/plugin-" + version,
          "#!/bin/sh\n"
          "n=$(cat " +
              count + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + count +
              "\n"
              "echo \"plugin run $n\" >&2\n"
              "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 9;; esac\n"
              "if [ $n = 1 ]; then t=stale; else t=" +
              token +
              "; fi\n"
              "printf '{\"apiVersion\":\"" +
              api + "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' $t\n",
          0755);
    write(s.dir + "/kc-exec-" + version,
          "current-context: c\nclusters:\n- name: t\n  cluster:\n    server: " + s.server +
              "\n    certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n    exec:\n"
              "      apiVersion: " +
              api + "\n      command: ./plugin-" + version +
              "\n      interactiveMode: Never\n      provideClusterInfo: true\n"
              "contexts:\n- name: c\n  context: {cluster: t, user: u}\n");
    e.env.global.kubeconfig = s.dir + "/kc-exec-" + version;
    CHECK(list_jobs(e.env) == 0);
    CHECK(slurp(count) == "2\n");
    CHECK(e.err.str().find("plugin run 2") != std::string::npos);  // stderr passed through
  }

  // A plugin that is not installed: its installHint.
  write(s.dir + "/kc-missing",
        "current-context: c\nclusters:\n- name: t\n  cluster: {server: " + s.server +
            "}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: "
            "client.authentication.k8s.io/v1\n"
            "      command: no-such-plugin-xyz\n      installHint: 'get it from example.com'\n"
            "contexts:\n- name: c\n  context: {cluster: t, user: u}\n");
  e.env.global.kubeconfig = s.dir + "/kc-missing";
  try {
    list_jobs(e.env);
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(err.exit_status() == 3);
    CHECK(std::string(err.what()).find("get it from example.com") != std::string::npos);
  }
}

TEST_CASE("apiserver: auth matrix: in-cluster service account") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir + "/nohome");
  const std::string sa = s.dir + "/sa";
  ::mkdir(sa.c_str(), 0755);
  write(sa + "/token", slurp(s.dir + "/token"));
  write(sa + "/ca.crt", slurp(s.dir + "/ca.crt"));
  write(sa + "/namespace", "default\n");
  e.env.vars[kube::kServiceAccountDirVar] = sa;
  e.env.vars["KUBERNETES_SERVICE_HOST"] = "127.0.0.1";
  e.env.vars["KUBERNETES_SERVICE_PORT"] = std::to_string(s.port);
  auto cfg = kube::load_client_config(e.env, {sa});
  CHECK(cfg.in_cluster);
  CHECK(list_jobs(e.env) == 0);
}

TEST_CASE("apiserver: TLS verification failure, rejected token and 403 are exit 3") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir);
  std::string kc = slurp(s.dir + "/kubeconfig");
  auto replace = [](std::string text, const std::string& from, const std::string& to) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  write(s.dir + "/kc-other-ca", replace(kc, s.dir + "/ca.crt", s.dir + "/other-ca.crt"));
  e.env.global.kubeconfig = s.dir + "/kc-other-ca";
  try {
    list_jobs(e.env);
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(err.exit_status() == 3);
    CHECK(std::string(err.what()).find("TLS verification") != std::string::npos);
  }

  const std::string token = slurp(s.dir + "/token").substr(0, 40);
  write(s.dir + "/kc-bad-token", replace(kc, "token: " + token, "token: wrong"));
  e.env.global.kubeconfig = s.dir + "/kc-bad-token";
  try {
    list_jobs(e.env);
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(err.exit_status() == 3);
    CHECK(std::string(err.what()).find("rejected the credentials of user 'token-user'") !=
          std::string::npos);
    CHECK(std::string(err.what()).find("wrong") == std::string::npos);
  }

  s.admin("POST", "/_test/forbid", {{"verb", "list"}, {"resource", "jobs"}});
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  try {
    list_jobs(e.env);
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(err.exit_status() == 3);
    CHECK(std::string(err.what()).find("403 Forbidden") != std::string::npos);
  }
}

TEST_CASE("apiserver: 429 and 503 are retried; a non-idempotent PATCH is not") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir);
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  const std::string jobs = "/apis/batch/v1/namespaces/default/jobs";
  for (int status : {429, 503}) {
    CAPTURE(status);
    s.admin("DELETE", "/_test/requests");
    s.admin(
        "POST", "/_test/faults",
        {{"method", "GET"}, {"path", jobs}, {"status", status}, {"retryAfter", 0}, {"count", 1}});
    CHECK(list_jobs(e.env) == 0);
    auto reqs = s.admin("GET", "/_test/requests?path=" + jobs);
    REQUIRE(reqs.size() == 2);  // the refused one, then the retry that succeeded
    CHECK(reqs[0]["status"] == status);
    CHECK(reqs[1]["status"] == 200);
  }

  // Scaling is a merge PATCH: not repeated after a 503.
  kube::Connection conn(e.env);
  conn.client().apply({{"apiVersion", "apps/v1"},
                       {"kind", "Deployment"},
                       {"metadata", {{"name", "web"}}},
                       {"spec",
                        {{"replicas", 1},
                         {"selector", {{"matchLabels", {{"app", "web"}}}}},
                         {"template",
                          {{"metadata", {{"labels", {{"app", "web"}}}}},
                           {"spec", {{"containers", {{{"name", "c"}, {"image", "i:1"}}}}}}}}}}},
                      "default");
  s.admin("DELETE", "/_test/requests");
  s.admin("POST", "/_test/faults",
          {{"method", "PATCH"},
           {"path", "/apis/apps/v1/namespaces/default/deployments/web/scale"},
           {"status", 503},
           {"count", 1}});
  cmd::ScaleRequest sr;
  sr.name = "web";
  sr.replicas = 3;
  try {
    cmd::run_scale(e.env, conn.client(), sr);
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("503 Service Unavailable") != std::string::npos);
    CHECK(err.exit_status() == 1);
  }
  auto patches = s.admin("GET", "/_test/requests?method=PATCH");
  CHECK(patches.size() == 1);
  // Without the fault it goes through.
  CHECK(cmd::run_scale(e.env, conn.client(), sr) == 0);
  CHECK(e.out.str().find("deployment.apps/web scaled") != std::string::npos);
}

TEST_CASE("apiserver: submit twice creates no duplicate; list, status and delete find the run") {
  if (!have_server()) return;
  TestServer s("pods:\n- match: {job: 'demo-*'}\n  hold: true\n");
  RealEnv e(s.dir);
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  backend::KubeBackend kb(std::make_unique<kube::Connection>(e.env), e.env);
  backend::SubmitOptions o;
  o.run_id = "twice";
  auto r1 = kb.submit(project_named("demo"), o);
  REQUIRE(r1.runs == std::vector<std::string>{"demo-twice"});
  auto job1 = kb.client().get("/apis/batch/v1/namespaces/default/jobs/demo-twice");
  auto secret1 = kb.client().get("/api/v1/namespaces/default/secrets/demo-twice-rdzv");
  kb.submit(project_named("demo"), o);
  auto job2 = kb.client().get("/apis/batch/v1/namespaces/default/jobs/demo-twice");
  auto secret2 = kb.client().get("/api/v1/namespaces/default/secrets/demo-twice-rdzv");
  CHECK(job1["metadata"]["uid"] == job2["metadata"]["uid"]);
  // The Job controller updates the status on its own; what submit sends is the spec.
  CHECK(job1["metadata"]["generation"] == job2["metadata"]["generation"]);
  CHECK(job1["spec"] == job2["spec"]);
  CHECK(secret1["metadata"]["resourceVersion"] == secret2["metadata"]["resourceVersion"]);
  CHECK(secret1["data"]["token"] == secret2["data"]["token"]);
  auto runs = kb.list({});
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].name == "demo-twice");
  CHECK(runs[0].nodes == 2);
  CHECK(runs[0].gpus == 1);

  // The pods appear and run (held).
  backend::RunStatus st;
  for (int i = 0; i < 200; ++i) {
    st = kb.status("demo-twice");
    if (st.ranks.size() == 2 && st.ranks[0].phase == "Running" && st.ranks[1].phase == "Running") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(st.ranks.size() == 2);
  CHECK(st.ranks[1].phase == "Running");
  CHECK_FALSE(st.ranks[1].node.empty());

  kb.remove("demo-twice");
  CHECK_FALSE(kb.client().get_if_exists("/apis/batch/v1/namespaces/default/jobs/demo-twice"));
  CHECK_FALSE(kb.client().get_if_exists("/api/v1/namespaces/default/secrets/demo-twice-rdzv"));
  CHECK_FALSE(kb.client().get_if_exists("/api/v1/namespaces/default/services/demo-twice"));
  CHECK_THROWS_WITH_AS(kb.status("demo-twice"), doctest::Contains("not found"), Error);
}

TEST_CASE("apiserver: status explains unschedulable, image pull, OOM and quota") {
  if (!have_server()) return;
  TestServer s(
      "pods:\n"
      "- match: {job: 'sched-*'}\n  unschedulable: true\n"
      "- match: {job: 'pull-*'}\n  imagePullError: true\n"
      "- match: {job: 'oom-*'}\n  oomKilled: true\n  runFor: 0.01\n"
      "jobs:\n- match: {name: 'quota-*'}\n  quotaExceeded: true\n");
  RealEnv e(s.dir);
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  backend::KubeBackend kb(std::make_unique<kube::Connection>(e.env), e.env);
  backend::SubmitOptions o;
  o.run_id = "x1";
  for (const char* name : {"sched", "pull", "oom", "quota"}) kb.submit(project_named(name, 1), o);

  auto wait_for = [&kb](const std::string& run, const std::string& words) {
    backend::RunStatus st;
    for (int i = 0; i < 200; ++i) {
      st = kb.status(run);
      for (const auto& x : st.explanations) {
        if (x.find(words) != std::string::npos) return x;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::string all;
    for (const auto& x : st.explanations) all += x + " | ";
    FAIL_CHECK(run << ": no explanation with '" << words << "' in: " << all);
    return std::string();
  };
  auto sched = wait_for("sched-x1", "cannot be scheduled");
  CHECK(sched.find("nodes are available") != std::string::npos);
  auto pull = wait_for("pull-x1", "cannot pull the image");
  CHECK(pull.find("registry.test/train:1") != std::string::npos);
  wait_for("oom-x1", "ran out of memory");
  wait_for("quota-x1", "ResourceQuota");
}

TEST_CASE("apiserver: serve waits for the rollout; scale warns about the HPA and patches it") {
  if (!have_server()) return;
  TestServer s;
  RealEnv e(s.dir);
  e.env.global.kubeconfig = s.dir + "/kubeconfig";
  kube::Connection conn(e.env);
  project::Project p;
  p.file = "ktrain.yaml";
  p.directory = "/tmp";
  p.name = "web";
  p.image.ref = "registry.test/serve:1";
  project::Serve sv;
  sv.port = 8080;
  sv.cpu = "1";
  project::Autoscale a;
  a.min = 2;
  a.max = 4;
  a.cpu = 80;
  sv.autoscale = a;
  p.serve = sv;
  cmd::ServeRun run;
  run.timeout = std::chrono::seconds(30);
  CHECK(cmd::run_serve(e.env, conn.client(), p, run) == 0);
  // Created with the autoscaler's minimum, and waited for.
  CHECK(e.out.str().find("web: rolled out, 2 replicas available") != std::string::npos);

  cmd::ScaleRequest sr;
  sr.name = "web";
  sr.replicas = 3;
  CHECK(cmd::run_scale(e.env, conn.client(), sr) == 0);
  CHECK(e.err.str().find("HorizontalPodAutoscaler \"web\" controls") != std::string::npos);
  // Serving again leaves the replicas to the autoscaler (3 now), not back to 2.
  run.wait = false;
  CHECK(cmd::run_serve(e.env, conn.client(), p, run) == 0);
  CHECK(conn.client().get("/apis/apps/v1/namespaces/default/deployments/web")["spec"]["replicas"] ==
        3);
  run.wait = true;
  sr.replicas.reset();
  sr.min = 1;
  sr.max = 6;
  CHECK(cmd::run_scale(e.env, conn.client(), sr) == 0);
  auto hpa =
      conn.client().get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web");
  CHECK(hpa["spec"]["minReplicas"] == 1);
  CHECK(hpa["spec"]["maxReplicas"] == 6);
  sr.name = "nope";
  CHECK_THROWS_WITH_AS(cmd::run_scale(e.env, conn.client(), sr), doctest::Contains("not found"),
                       Error);
}
