#include "runtime/spawner.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ktrain::launch;

TEST_CASE("spawner: the rendezvous secret is never passed on to a child") {
  std::string a = "PATH=/usr/bin", s = "KTRAIN_RDZV_SECRET=hunter2", r = "KTRAIN_RUN=bert";
  char* base[] = {a.data(), s.data(), r.data(), nullptr};
  std::vector<std::string> env = merge_environment(base, {{"KTRAIN_RANK", "3"}});
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin", "KTRAIN_RUN=bert", "KTRAIN_RANK=3"});
  // Not even when asked for explicitly.
  env = merge_environment(base, {{"KTRAIN_RDZV_SECRET", "x"}});
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin", "KTRAIN_RUN=bert"});
}
