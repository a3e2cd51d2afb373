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
  // Every object submit creates: the rendezvous Secret, the Service, the Job.
  REQUIRE(j["items"].size() == 3);
  CHECK(j["items"][0]["kind"] == "Secret");
  CHECK(j["items"][0]["metadata"]["name"] == "demo-x1-rdzv");
  CHECK(ktrain::kube::base64_decode(j["items"][0]["data"]["token"]).size() == 64);
  CHECK(j["items"][1]["kind"] == "Service");
  CHECK(j["items"][2]["kind"] == "Job");
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
  // The same but for the rendezvous token, which is fresh each time.
  auto token = [](const std::string& out) {
    const auto at = out.find("\n  token: ");
    REQUIRE(at != std::string::npos);
    return out.substr(at, out.find('\n', at + 1) - at);
  };
  const std::string ta = token(a.out), tb = token(b.out);
  CHECK(ta != tb);
  std::string a_out = a.out, b_out = b.out;
  a_out.replace(a_out.find(ta), ta.size(), "");
  b_out.replace(b_out.find(tb), tb.size(), "");
  CHECK(a_out == b_out);
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
