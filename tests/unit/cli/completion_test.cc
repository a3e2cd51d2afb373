#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace {

using ktrain::testing::CliRun;

CliRun run(std::vector<const char*> args) {
  return ktrain::testing::run_cli(std::move(args));
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

const std::vector<std::string> kVerbs = {"init",  "validate",   "render", "build",  "submit",
                                         "list",  "status",     "logs",   "delete", "serve",
                                         "scale", "completion", "schema", "version"};

}  // namespace

TEST_CASE("completion: each shell's script names every visible verb and never the keeper") {
  for (const char* shell : {"bash", "zsh", "fish"}) {
    CAPTURE(shell);
    auto r = run({"completion", shell});
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    for (const auto& verb : kVerbs) {
      CAPTURE(verb);
      CHECK(has(r.out, verb));
    }
    CHECK_FALSE(has(r.out, "__keeper"));
    CHECK_FALSE(has(r.out, "keeper"));
  }
}

TEST_CASE("completion: verb flags come from the verbs themselves") {
  auto bash = run({"completion", "bash"}).out;
  CHECK(has(bash, "--follow"));
  CHECK(has(bash, "--run-id"));
  CHECK(has(bash, "--all-namespaces"));
  CHECK(has(bash, "--kubeconfig"));
  CHECK(has(bash, "complete -o default -F _ktrain ktrain"));

  auto zsh = run({"completion", "zsh"}).out;
  CHECK(zsh.rfind("#compdef ktrain\n", 0) == 0);
  CHECK(has(zsh, "--follow"));
  CHECK(has(zsh, "'submit:"));

  auto fish = run({"completion", "fish"}).out;
  CHECK(has(fish, "complete -c ktrain -n '__fish_seen_subcommand_from submit' -l follow"));
  CHECK(has(fish, "complete -c ktrain -n __fish_use_subcommand -a submit"));
  // -f/--file takes a file name; --follow of logs is -f too but takes none.
  CHECK(has(fish, "-s f -l file -r -F"));
  CHECK(has(fish, "'__fish_seen_subcommand_from logs' -s f -l follow -d"));
}

TEST_CASE("completion: -f/--file completes file names in bash") {
  auto bash = run({"completion", "bash"}).out;
  // submit's file-taking flags are listed for file completion.
  const auto at = bash.find("    submit)\n");
  REQUIRE(at != std::string::npos);
  const auto end = bash.find(";;", at);
  const std::string submit = bash.substr(at, end - at);
  CHECK(has(submit, "files=' -f --file '"));
  const auto dev_at = bash.find("    dev)\n");
  REQUIRE(dev_at != std::string::npos);
  const std::string dev = bash.substr(dev_at, bash.find(";;", dev_at) - dev_at);
  CHECK(has(dev, "files=' -f --file '"));
  CHECK(has(dev, "--jupyter"));
  CHECK(has(bash, "compgen -f -- \"$cur\""));
}

TEST_CASE("completion: run names for the verbs that take a RUN come from `ktrain list`") {
  auto bash = run({"completion", "bash"}).out;
  CHECK(has(bash,
            "' status top events logs exec port-forward delete stop resume ' == *\" $verb \"*"));
  CHECK(has(bash, "list \"${ctx[@]}\" -o name"));
  auto fish = run({"completion", "fish"}).out;
  CHECK(has(fish, "'__fish_seen_subcommand_from logs' -a '(__ktrain_runs)'"));
  CHECK(has(fish, "'__fish_seen_subcommand_from exec' -a '(__ktrain_runs)'"));
  CHECK(has(fish, "'__fish_seen_subcommand_from port-forward' -a '(__ktrain_runs)'"));
  CHECK(has(fish, "ktrain list $ctx -o name 2>/dev/null"));
  CHECK_FALSE(has(fish, "'__fish_seen_subcommand_from submit' -a '(__ktrain_runs)'"));
}

TEST_CASE("completion: the script is the same every time") {
  CHECK(run({"completion", "bash"}).out == run({"completion", "bash"}).out);
}

TEST_CASE("completion: an unknown shell is a usage error naming the shells, nothing on stdout") {
  auto r = run({"completion", "tcsh"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(has(r.err, "ktrain: error: completion tcsh"));
  CHECK(has(r.err, "bash, zsh, fish"));
}

TEST_CASE("completion: no shell at all is a usage error") {
  auto r = run({"completion"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
}
