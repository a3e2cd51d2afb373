#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace {

using ktrain::testing::CliRun;

CliRun run(std::vector<const char*> args) {
  return ktrain::testing::run_cli(std::move(args));
}

}  // namespace

TEST_CASE("cli: version prints the client version") {
  auto r = run({"version"});
  CHECK(r.status == 0);
  CHECK(r.out == std::string("ktrain ") + KTRAIN_VERSION + "\n");
}

TEST_CASE("cli: schema prints the JSON Schema of ktrain.yaml on stdout, also with -o json") {
  auto r = run({"schema"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["$schema"] == "http://json-schema.org/draft-07/schema#");
  CHECK(j["$id"] == "https://ktrain.dev/schema/ktrain.yaml/" KTRAIN_VERSION ".json");
  CHECK(j["properties"].contains("train"));
  CHECK(r.out.find("\n  \"$id\"") != std::string::npos);  // indented
  CHECK(run({"schema", "-o", "json"}).out == r.out);
  auto yaml = run({"schema", "-o", "yaml"});
  CHECK(yaml.status == 2);
  CHECK(yaml.out.empty());
  CHECK(yaml.err == "ktrain: error: -o yaml: schema prints JSON (-o json)\n");
  // --help says how to point an editor at it, then the global flags.
  auto help = run({"schema", "--help"});
  CHECK(help.status == 0);
  CHECK(help.out.find("ktrain schema > .ktrain.schema.json") != std::string::npos);
  CHECK(help.out.find("# yaml-language-server: $schema=./.ktrain.schema.json") !=
        std::string::npos);
  CHECK(help.out.find("Global flags") > help.out.find("yaml.schemas"));
}

TEST_CASE("cli: an unknown verb is a usage error with exit status 2 and nothing on stdout") {
  auto r = run({"frobnicate"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("ktrain: error:") != std::string::npos);
}

TEST_CASE("cli: no verb at all is a usage error") {
  auto r = run({});
  CHECK(r.status == 2);
}

TEST_CASE("cli: --help prints usage on stdout and exits 0") {
  auto r = run({"--help"});
  CHECK(r.status == 0);
  CHECK(r.out.find("version") != std::string::npos);
}

TEST_CASE("cli: a misspelt verb gets a did-you-mean and the verb's usage") {
  auto r = run({"sumbit", "-f", "x.yaml"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("ktrain: error: unknown verb 'sumbit'; did you mean 'submit'?\nUsage: ktrain "
                   "submit") != std::string::npos);
  // Global flags before the verb, with their values, are skipped over.
  auto g = run({"-n", "team", "--context=prod", "stauts", "run-1"});
  CHECK(g.status == 2);
  CHECK(g.err.find("unknown verb 'stauts'; did you mean 'status'?") != std::string::npos);
  // Nothing close: the list of verbs.
  auto far = run({"frobnicate"});
  CHECK(
      far.err.find("unknown verb 'frobnicate'; the verbs are init, validate, render, diff, build, "
                   "submit,") != std::string::npos);
  CHECK(far.err.find("__keeper") == std::string::npos);
}

TEST_CASE("cli: a misspelt flag gets a did-you-mean among the verb's and the global flags") {
  auto r = run({"submit", "-f", "x.yaml", "--folow"});
  CHECK(r.status == 2);
  CHECK(r.err.find("ktrain: error: ktrain submit: unknown flag '--folow'; did you mean "
                   "'--follow'?\nUsage: ktrain submit") != std::string::npos);
  auto g = run({"list", "--namspace", "x"});
  CHECK(g.err.find("ktrain list: unknown flag '--namspace'; did you mean '--namespace'?") !=
        std::string::npos);
  auto v = run({"logs", "run-1", "--tail=3", "--timestampz"});
  CHECK(v.err.find("unknown flag '--timestampz'; did you mean '--timestamps'?") !=
        std::string::npos);
  // After "--", arguments are the command's, not ktrain's.
  auto cmd = run({"submit", "--bogus-flag-xyz"});
  CHECK(cmd.err.find("unknown flag '--bogus-flag-xyz'") != std::string::npos);
  CHECK(cmd.err.find("did you mean") == std::string::npos);
}

TEST_CASE("cli: every verb's --help lists the global flags") {
  for (const char* verb : {"submit", "logs", "build", "list", "status"}) {
    auto r = run({verb, "--help"});
    INFO(verb);
    CHECK(r.status == 0);
    const auto at = r.out.find("Global flags (before or after the verb):");
    REQUIRE(at != std::string::npos);
    CHECK(r.out.find("-n,--namespace TEXT", at) != std::string::npos);
    CHECK(r.out.find("--context TEXT", at) != std::string::npos);
    CHECK(r.out.find("-o,--output table|wide|yaml|json|name", at) != std::string::npos);
    CHECK(r.out.find("-v,--verbose", at) != std::string::npos);
  }
}
