// Which image a project's pods run: the build record (.ktrain/build.json), image.ref's
// tag, or the stock image; and render, validate and submit --dry-run using it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../cli_runner.h"
#include "../render/render_test_util.h"
#include "base/error.h"
#include "cmd/built_image.h"
#include "oci/build_record.h"
#include "project/parse.h"

namespace {

using ktrain::cmd::choose_image;
using ktrain::oci::BuiltImage;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kOther = "sha256:" + std::string(64, 'b');

/// A project with image.build pushing to reg.example.com/team/app; `ref` as image.ref.
std::string project_text(const std::string& ref) {
  std::string s = "name: app\nimage:\n";
  if (!ref.empty()) s += "  ref: " + ref + "\n";
  s += "  build:\n    base: python:3.12\n    repository: reg.example.com/team/app\n"
       "train:\n  command: [python, train.py]\n  nodes: 2\n";
  return s;
}

ktrain::project::Project project_of(const std::string& text) {
  return ktrain::project::parse_project(text, "/p/ktrain.yaml", "/p");
}

BuiltImage built(std::vector<std::string> tags = {}) {
  BuiltImage b;
  b.repository = "reg.example.com/team/app";
  b.digest = kDigest;
  b.tags = std::move(tags);
  b.cuda = "12.1";
  b.built = "2026-12-01T10:00:00Z";
  return b;
}

}  // namespace

TEST_CASE("built image: the record's digest runs, whatever tag build pushed") {
  const auto c = choose_image(project_of(project_text("")), built(), "/p/.ktrain/build.json");
  CHECK(c.image == "reg.example.com/team/app@" + kDigest);
  CHECK(c.problem.empty());
  CHECK(c.warning.empty());
  CHECK(c.cuda == "12.1");
  CHECK(c.why.find("built by ktrain build at 2026-12-01T10:00:00Z") != std::string::npos);
  // image.ref naming a tag that build pushed: the digest, not the movable tag.
  const auto t = choose_image(project_of(project_text("reg.example.com/team/app:0.1.0")),
                              built({"0.1.0"}), "r");
  CHECK(t.image == "reg.example.com/team/app@" + kDigest);
}

TEST_CASE("built image: nothing built and no tag is a problem; a tag is run as it is") {
  const auto none =
      choose_image(project_of(project_text("")), std::nullopt, "/p/.ktrain/build.json");
  CHECK(none.problem.find("nothing is built yet") != std::string::npos);
  CHECK(none.problem.find("ktrain build") != std::string::npos);
  CHECK(none.problem.find("reg.example.com/team/app:latest") != std::string::npos);
  const auto tag =
      choose_image(project_of(project_text("reg.example.com/team/app:0.1.0")), std::nullopt, "r");
  CHECK(tag.image == "reg.example.com/team/app:0.1.0");
  CHECK(tag.problem.empty());
  // A tag that the last build did not push: run it, and say so.
  const auto other = choose_image(project_of(project_text("reg.example.com/team/app:0.2.0")),
                                  built({"0.1.0"}), "r");
  CHECK(other.image == "reg.example.com/team/app:0.2.0");
  CHECK(other.warning.find("did not push") != std::string::npos);
  // Another repository, or a digest: as the project says.
  const auto stock =
      choose_image(project_of(project_text("nvcr.io/nvidia/pytorch:24.05-py3")), built(), "r");
  CHECK(stock.image == "nvcr.io/nvidia/pytorch:24.05-py3");
  const auto pinned =
      choose_image(project_of(project_text("reg.example.com/team/app@" + kOther)), built(), "r");
  CHECK(pinned.image == "reg.example.com/team/app@" + kOther);
}

TEST_CASE("build record: a synced image keeps the build under it and its depth") {
  BuiltImage synced = built({"v1"});
  synced.onto = kOther;
  synced.depth = 3;
  const std::string text = ktrain::oci::record_built_image("", synced);
  auto a = ktrain::oci::find_built_image(text, "reg.example.com/team/app", "f");
  REQUIRE(a);
  CHECK(a->onto == kOther);
  CHECK(a->depth == 3);
  // A full build records neither.
  auto b = ktrain::oci::find_built_image(ktrain::oci::record_built_image(text, built()),
                                         "reg.example.com/team/app", "f");
  REQUIRE(b);
  CHECK(b->onto.empty());
  CHECK(b->depth == 0);
}

TEST_CASE("build record: entries by repository, kept across builds of others") {
  std::string text = ktrain::oci::record_built_image("", built({"v1"}));
  BuiltImage other = built();
  other.repository = "reg.example.com/team/other";
  other.digest = kOther;
  text = ktrain::oci::record_built_image(text, other);
  auto a = ktrain::oci::find_built_image(text, "reg.example.com/team/app", "f");
  REQUIRE(a);
  CHECK(a->digest == kDigest);
  CHECK(a->tags == std::vector<std::string>{"v1"});
  auto b = ktrain::oci::find_built_image(text, "reg.example.com/team/other", "f");
  REQUIRE(b);
  CHECK(b->digest == kOther);
  CHECK_FALSE(ktrain::oci::find_built_image(text, "reg.example.com/none", "f"));
  // A record that is not one is an error naming the file, not a silent stock image.
  CHECK_THROWS_WITH_AS(ktrain::oci::find_built_image("{", "x", "/p/.ktrain/build.json"),
                       doctest::Contains("/p/.ktrain/build.json: not a build record"),
                       ktrain::Error);
  CHECK_THROWS_WITH_AS(
      ktrain::oci::find_built_image(R"({"images":{"x":{"digest":"sha256:zz"}}})", "x", "f"),
      doctest::Contains("bad digest"), ktrain::Error);
}

TEST_CASE("render runs what build recorded; without a record it warns, submit refuses") {
  ktrain::render::testing::MemoryFileSystem fs;
  fs.files["/p/ktrain.yaml"] = project_text("");
  auto r = ktrain::testing::run_cli({"render", "-f", "/p/ktrain.yaml", "--run-id", "x1"}, &fs);
  CHECK(r.status == 0);
  CHECK(r.err.find("nothing is built yet") != std::string::npos);
  fs.files["/p/.ktrain/build.json"] = ktrain::oci::record_built_image("", built());
  r = ktrain::testing::run_cli({"render", "-f", "/p/ktrain.yaml", "--run-id", "x1"}, &fs);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("image: reg.example.com/team/app@" + kDigest) != std::string::npos);
  // The image build made carries the launcher: no init container.
  CHECK(r.out.find("initContainers") == std::string::npos);
  // validate says which image runs.
  r = ktrain::testing::run_cli({"validate", "-f", "/p/ktrain.yaml", "-o", "json"}, &fs);
  CHECK(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["image"]["ref"] == "reg.example.com/team/app@" + kDigest);
  CHECK(j["image"]["source"].get<std::string>().find("/p/.ktrain/build.json") != std::string::npos);
  // Nothing built: submit refuses before it asks anything of a cluster (exit 2).
  fs.files.erase("/p/.ktrain/build.json");
  r = ktrain::testing::run_cli({"submit", "-f", "/p/ktrain.yaml", "--context", "none"}, &fs);
  CHECK(r.status == 2);
  CHECK(r.err.find("nothing is built yet") != std::string::npos);
}
