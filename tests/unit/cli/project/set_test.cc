// --set key.path=value overrides.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "project/parse.h"

using namespace ktrain::project;

namespace {

const char* const kSetBase =
    "name: hello\nimage: python:3.12\ntrain:\n  command: [python, train.py, x]\n  nodes: 2\n";

Project parse_with(const std::vector<std::string>& sets, const std::string& text = kSetBase) {
  return parse_project(text, "ktrain.yaml", "/p", sets);
}

std::string problem_with(const std::vector<std::string>& sets, const std::string& text = kSetBase) {
  try {
    parse_with(sets, text);
  } catch (const ProjectError& e) {
    std::string out;
    for (const auto& p : e.problems()) out += (out.empty() ? "" : "\n") + p.format();
    return out;
  }
  return "";
}

}  // namespace

TEST_CASE("set: scalars by key path, values parsed as YAML scalars") {
  auto p = parse_with({"train.nodes=4", "train.gpus=8", "name=other"});
  CHECK(p.train->nodes == 4);
  CHECK(p.train->gpus == 8);
  CHECK(p.name == "other");
}

TEST_CASE("set: free-form maps take the rest of the path as one key") {
  auto p = parse_with({"train.env.LR=0.1", "labels.team=vision",
                       "scheduling.nodeSelector.topology.kubernetes.io/zone=us-east-1a"});
  CHECK(p.train->env == StringPairs{{"LR", "0.1"}});
  CHECK(p.labels == StringPairs{{"team", "vision"}});
  CHECK(p.scheduling.node_selector == StringPairs{{"topology.kubernetes.io/zone", "us-east-1a"}});
}

TEST_CASE("set: bracketed keys and list indices") {
  auto p = parse_with({"scheduling.nodeSelector[topology.kubernetes.io/zone]=b",
                       "train.command[2]=y", "train.command[3]=z"});
  CHECK(p.scheduling.node_selector == StringPairs{{"topology.kubernetes.io/zone", "b"}});
  CHECK(p.train->command == std::vector<std::string>{"python", "train.py", "y", "z"});
}

TEST_CASE("set: flow lists and maps are accepted as values") {
  auto p =
      parse_with({"train.command=[python, other.py]", "train.volumes[0]={claim: d, mount: /d}"});
  CHECK(p.train->command == std::vector<std::string>{"python", "other.py"});
  REQUIRE(p.train->volumes.size() == 1);
  CHECK(p.train->volumes[0].mount == "/d");
}

TEST_CASE("set: the same validation, located at the flag") {
  CHECK(problem_with({"train.nodes=abc"}) ==
        "--set train.nodes=abc: train.nodes: expected a whole number >= 1, found \"abc\"");
  CHECK(problem_with({"train.gpu=2"}) ==
        "--set train.gpu=2: train.gpu: unknown key; did you mean `train.gpus`?");
  CHECK(problem_with({"train.memory=1gb"}) ==
        "--set train.memory=1gb: train.memory: expected a Kubernetes quantity like 500m, 2, 16Gi, "
        "found \"1gb\"; did you mean 1Gi?");
}

TEST_CASE("set: malformed flags") {
  CHECK(problem_with({"train.nodes"}) ==
        "--set train.nodes: expected key.path=value, like --set train.nodes=2");
  CHECK(problem_with({"=3"}) == "--set =3: expected key.path=value, like --set train.nodes=2");
  CHECK(problem_with({"train.command[9]=x"}) ==
        "--set train.command[9]=x: train.command: index 9 is out of range: the list has 3 items "
        "(use [3] to append)");
  CHECK(problem_with({"train.nodes.x=1"}) ==
        "--set train.nodes.x=1: train.nodes: cannot set `x` inside `train.nodes`: it is \"2\", "
        "not a map");
  CHECK(problem_with({"train..nodes=1"}) ==
        "--set train..nodes=1: empty key in the key path `train..nodes`");
  CHECK(problem_with({"train.command[=1"}) ==
        "--set train.command[=1: train.command: unclosed '[' in the key path; write [N] for a list "
        "index or [key.with.dots]");
}

TEST_CASE("set: file problems come first, then --set problems") {
  CHECK(problem_with({"train.nodes=0"}, std::string(kSetBase) + "  gpus: -1\n") ==
        "ktrain.yaml:6:9: train.gpus: expected a whole number >= 0, found \"-1\"\n"
        "--set train.nodes=0: train.nodes: expected a whole number >= 1, found \"0\"");
}

TEST_CASE("set: builds a whole project on an empty file, creating intermediate maps") {
  auto p = parse_with({"name=x", "image=a:1", "train.command=[run]", "serve.port=80"}, "");
  CHECK(p.name == "x");
  CHECK(p.train->command == std::vector<std::string>{"run"});
  CHECK(p.serve->port == 80);
}
