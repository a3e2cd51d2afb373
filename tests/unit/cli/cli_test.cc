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

}  // namespace

TEST_CASE("cli: version prints the client version") {
  auto r = run({"version"});
  CHECK(r.status == 0);
  CHECK(r.out == std::string("ktrain ") + KTRAIN_VERSION + "\n");
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
