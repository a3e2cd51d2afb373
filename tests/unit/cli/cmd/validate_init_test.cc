// `ktrain validate` and `ktrain init`, run through the command line with an in-memory file system.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../cli_runner.h"
#include "base/error.h"
#include "cmd/command.h"
#include "cmd/init.h"
#include "project/parse.h"

namespace {

/// Files in memory; folders are paths in `dirs`.
class MemoryFileSystem : public ktrain::FileSystem {
 public:
  std::map<std::string, std::string> files;
  std::vector<std::string> dirs;

  std::string read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) throw ktrain::Error("cannot read '" + path + "': No such file");
    return it->second;
  }
  void write_file(const std::string& path, const std::string& content) override {
    files[path] = content;
  }
  bool exists(const std::string& path) override {
    return files.count(path) > 0 || is_directory(path);
  }
  bool is_directory(const std::string& path) override {
    for (const auto& d : dirs)
      if (d == path) return true;
    return false;
  }
};

using Run = ktrain::testing::CliRun;

Run run(MemoryFileSystem& fs, std::vector<const char*> args, const std::string& stdin_text = "") {
  return ktrain::testing::run_cli(std::move(args), &fs, stdin_text);
}

const char* const kValid =
    "name: hello\nimage: python:3.12\ntrain:\n  command: [python, train.py]\n  nodes: 2\n"
    "  gpus: 4\n";

}  // namespace

TEST_CASE("validate: a valid file prints a one-line summary and exits 0") {
  MemoryFileSystem fs;
  fs.files["ktrain.yaml"] = kValid;
  auto r = run(fs, {"validate"});
  CHECK(r.status == 0);
  CHECK(r.out ==
        "ktrain.yaml: valid (train: 2 nodes x 4 GPUs, pytorch; launcher injected by an init "
        "container from "
        "ghcr.io/ktrain/ktrain-launch:" KTRAIN_VERSION
        " (ktrain's default); runs as user 1000:1000)\n");
  CHECK(r.err.empty());
  auto q = run(fs, {"validate", "-q"});
  CHECK(q.status == 0);
  CHECK(q.out.empty());
}

TEST_CASE("validate: problems go to stderr, nothing to stdout, exit 2") {
  MemoryFileSystem fs;
  fs.files["p.yaml"] = "name: hello\nimage: python:3.12\ntrain:\n  command: [x]\n  gpus: -1\n";
  auto r = run(fs, {"validate", "-f", "p.yaml"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "p.yaml:5:9: train.gpus: expected a whole number >= 0, found \"-1\"\n");
}

TEST_CASE("validate: --set overrides are validated too") {
  MemoryFileSystem fs;
  fs.files["ktrain.yaml"] = kValid;
  auto ok = run(fs, {"validate", "--set", "train.nodes=8", "--set", "train.gpus=1"});
  CHECK(ok.status == 0);
  CHECK(ok.out ==
        "ktrain.yaml: valid (train: 8 nodes x 1 GPU, pytorch; launcher injected by an init "
        "container from "
        "ghcr.io/ktrain/ktrain-launch:" KTRAIN_VERSION
        " (ktrain's default); runs as user 1000:1000)\n");
  auto bad = run(fs, {"validate", "--set", "train.nodes=abc"});
  CHECK(bad.status == 2);
  CHECK(bad.err ==
        "--set train.nodes=abc: train.nodes: expected a whole number >= 1, found \"abc\"\n");
}

TEST_CASE("validate: -o json reports on stdout, also when invalid") {
  MemoryFileSystem fs;
  fs.files["ktrain.yaml"] = "name: Bad\nimage: python:3.12\ntrain: {command: [x]}\n";
  auto r = run(fs, {"validate", "-o", "json"});
  CHECK(r.status == 2);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["valid"] == false);
  REQUIRE(j["problems"].size() == 1);
  CHECK(j["problems"][0]["line"] == 1);
  CHECK(j["problems"][0]["column"] == 7);
  CHECK(j["problems"][0]["path"] == "name");
  fs.files["ktrain.yaml"] = kValid;
  auto ok = run(fs, {"validate", "-o", "json"});
  CHECK(ok.status == 0);
  CHECK(nlohmann::json::parse(ok.out)["valid"] == true);
  CHECK(run(fs, {"validate", "-o", "yaml"}).status == 2);
}

TEST_CASE("validate: missing file, directory, stdin") {
  MemoryFileSystem fs;
  auto missing = run(fs, {"validate"});
  CHECK(missing.status == 2);
  CHECK(missing.out.empty());
  CHECK(missing.err ==
        "ktrain.yaml: no such file; create one with 'ktrain init', or name another with -f PATH\n");
  fs.dirs.push_back("proj");
  auto dir = run(fs, {"validate", "-f", "proj"});
  CHECK(dir.status == 2);
  CHECK(dir.err == "proj: is a directory, not a project file; try -f proj/ktrain.yaml\n");
  auto in = run(fs, {"validate", "-f", "-"}, kValid);
  CHECK(in.status == 0);
  CHECK(in.out ==
        "<stdin>: valid (train: 2 nodes x 4 GPUs, pytorch; launcher injected by an init container "
        "from "
        "ghcr.io/ktrain/ktrain-launch:" KTRAIN_VERSION
        " (ktrain's default); runs as user 1000:1000)\n");
}

TEST_CASE("init: writes a commented file that validates; refuses to overwrite without --force") {
  MemoryFileSystem fs;
  auto r = run(fs, {"init", "--name", "demo", "--gpus", "8", "--nodes", "2", "--image",
                    "reg.io/team/app:v1"});
  CHECK(r.status == 0);
  REQUIRE(fs.files.count("ktrain.yaml"));
  const std::string text = fs.files["ktrain.yaml"];
  CHECK(text.find("# ktrain project file") != std::string::npos);
  // The first line names the JSON Schema for editors (yaml-language-server), by its $id.
  CHECK(text.substr(0, text.find('\n') + 1) ==
        "# yaml-language-server: $schema=https://ktrain.dev/schema/ktrain.yaml/" KTRAIN_VERSION
        ".json\n");
  auto p = ktrain::project::parse_project(text, "ktrain.yaml", "/p");
  CHECK(p.name == "demo");
  CHECK(p.image.ref == "reg.io/team/app:v1");
  CHECK(p.train->gpus == 8);
  CHECK(p.train->nodes == 2);
  CHECK(run(fs, {"validate"}).status == 0);

  auto again = run(fs, {"init", "--name", "other"});
  CHECK(again.status == 2);
  CHECK(again.err == "ktrain: error: ktrain.yaml: already exists; use --force to overwrite it\n");
  CHECK(fs.files["ktrain.yaml"] == text);
  auto forced = run(fs, {"init", "--name", "other", "--force"});
  CHECK(forced.status == 0);
  CHECK(fs.files["ktrain.yaml"].find("name: other") != std::string::npos);
}

TEST_CASE("init: every framework's default file parses") {
  for (const char* fw : {"pytorch", "paddle", "tensorflow", "jax", "none"}) {
    CAPTURE(fw);
    ktrain::cmd::InitOptions o;
    o.name = "x";
    o.framework = fw;
    o.gpus = 0;
    o.complete();
    o.validate();
    auto p = ktrain::project::parse_project(ktrain::cmd::init_project_text(o), "k.yaml", "/");
    CHECK(p.train->framework == fw);
  }
}

TEST_CASE("init: bad flags are usage errors and write nothing") {
  MemoryFileSystem fs;
  CHECK(run(fs, {"init", "--name", "Bad_Name"}).status == 2);
  CHECK(run(fs, {"init", "--name", "a", "--image", "UP/per"}).status == 2);
  CHECK(run(fs, {"init", "--name", "a", "--gpus", "-1"}).status == 2);
  CHECK(run(fs, {"init", "--name", "a", "--nodes", "0"}).status == 2);
  auto fw = run(fs, {"init", "--name", "a", "--framework", "torch"});
  CHECK(fw.status == 2);
  CHECK(fw.err ==
        "ktrain: error: --framework: expected one of pytorch | paddle | tensorflow | jax | none, "
        "found \"torch\"\n");
  CHECK(fs.files.empty());
}

TEST_CASE("init: -f - writes the file to stdout") {
  MemoryFileSystem fs;
  auto r = run(fs, {"init", "--name", "a", "-f", "-"});
  CHECK(r.status == 0);
  CHECK(r.out.find("name: a") != std::string::npos);
  CHECK(fs.files.empty());
}
