#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cmd/command.h"

namespace {

struct CliRun {
  int status = 0;
  std::string out;
  std::string err;
};

CliRun run(std::vector<const char*> args) {
  std::ostringstream out, err;
  std::istringstream in;
  ktrain::Env env;
  env.in = &in;
  env.out = &out;
  env.err = &err;
  args.insert(args.begin(), "ktrain");
  CliRun r;
  r.status = ktrain::cmd::run_cli(static_cast<int>(args.size()), args.data(), env);
  r.out = out.str();
  r.err = err.str();
  return r;
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
