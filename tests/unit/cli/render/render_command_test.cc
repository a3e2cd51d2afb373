#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../cli_runner.h"
#include "kube/kubeconfig.h"
#include "render_test_util.h"

namespace {

using ktrain::testing::CliRun;

const char* const kProject = R"(name: demo
image: registry.example.com/ml/demo:v1
train:
  command: [python3, train.py]
  nodes: 2
)";

CliRun run(ktrain::render::testing::MemoryFileSystem& fs, std::vector<const char*> args) {
  return ktrain::testing::run_cli(std::move(args), &fs);
}

}  // namespace

TEST_CASE("ktrain render: prints YAML by default, JSON with -o json") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = kProject;
  auto r = run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "x1"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("kind: Job\n") != std::string::npos);
  CHECK(r.out.find("name: demo-x1\n") != std::string::npos);
  r = run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "x1", "-o", "json"});
  CHECK(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["kind"] == "List");
  // The Service and the Job; the rendezvous Secret is submit's, never printed.
  REQUIRE(j["items"].size() == 2);
  CHECK(j["items"][0]["kind"] == "Service");
  CHECK(j["items"][1]["kind"] == "Job");
}

TEST_CASE("ktrain render: a pure function: the same bytes twice, and no secret in them") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = kProject;
  const auto a = run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "x1"});
  const auto b = run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "x1"});
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("kind: Secret") == std::string::npos);
  CHECK(a.out.find("\n  token: ") == std::string::npos);
  // The Job's pods take the Secret where submit made it, else their Job's uid.
  const auto j = nlohmann::json::parse(
      run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "x1", "-o", "json"}).out);
  const auto& env = j["items"][1]["spec"]["template"]["spec"]["containers"][0]["env"];
  bool secret = false, uid = false;
  for (const auto& e : env) {
    if (e["name"] == "KTRAIN_RDZV_SECRET") {
      secret = true;
      CHECK(e["valueFrom"]["secretKeyRef"]["name"] == "demo-x1-rdzv");
      CHECK(e["valueFrom"]["secretKeyRef"]["optional"] == true);
    }
    if (e["name"] == "KTRAIN_RDZV_JOB_UID") {
      uid = true;
      CHECK(e["valueFrom"]["fieldRef"]["fieldPath"] ==
            "metadata.labels['batch.kubernetes.io/controller-uid']");
    }
  }
  CHECK(secret);
  CHECK(uid);
}

TEST_CASE("ktrain render: a bad run id or output format is exit status 2 with nothing on stdout") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = kProject;
  auto r = run(fs, {"render", "-f", "/p/ktrain.yaml", "--run-id", "Bad_Id"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("--run-id") != std::string::npos);
  r = run(fs, {"render", "-f", "/p/ktrain.yaml", "-o", "table"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
}

TEST_CASE("ktrain render: an unpinned image warns, and fails with --strict") {
  ktrain::render::testing::MemoryFileSystem fs;
  std::string text = kProject;
  text.replace(text.find(":v1"), 3, ":latest");
  fs.files["/p/ktrain.yaml"] = text;
  auto r = run(fs, {"render", "-f", "/p/ktrain.yaml"});
  CHECK(r.status == 0);
  CHECK(r.err.find("ktrain: warning: image") != std::string::npos);
  CHECK_FALSE(r.out.empty());
  r = run(fs, {"render", "-f", "/p/ktrain.yaml", "--strict"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("latest") != std::string::npos);
}

TEST_CASE("ktrain render: --set overrides the file and the output stays deterministic") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = kProject;
  auto a = run(fs, {"render", "-f", "/p/ktrain.yaml", "--set", "train.nodes=3"});
  auto b = run(fs, {"render", "-f", "/p/ktrain.yaml", "--set", "train.nodes=3"});
  CHECK(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("completions: 3\n") != std::string::npos);
}

TEST_CASE("ktrain render: --templates with a missing file is exit status 2") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = kProject;
  auto r = run(fs, {"render", "-f", "/p/ktrain.yaml", "--templates", "/nowhere"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("service-headless.yaml") != std::string::npos);
}
