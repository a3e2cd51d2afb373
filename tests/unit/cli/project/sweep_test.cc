#include <doctest/doctest.h>

#include "project/sweep.h"

using namespace ktrain::project;

TEST_CASE("sweep: no sweep is one point with index -1 and the base run name") {
  Train t;
  auto points = sweep_points(t);
  REQUIRE(points.size() == 1);
  CHECK(points[0].index == -1);
  CHECK(points[0].params.empty());
  CHECK(sweep_run_name("r-abc12", points[0]) == "r-abc12");
}

TEST_CASE("sweep: a 2x3 grid in order, first parameter varying slowest") {
  Train t;
  t.sweep = {{"lr", {"0.1", "0.01"}}, {"batch", {"128", "256", "512"}}};
  auto points = sweep_points(t);
  REQUIRE(points.size() == 6);
  CHECK(points[0].params == StringPairs{{"lr", "0.1"}, {"batch", "128"}});
  CHECK(points[2].params == StringPairs{{"lr", "0.1"}, {"batch", "512"}});
  CHECK(points[3].params == StringPairs{{"lr", "0.01"}, {"batch", "128"}});
  CHECK(points[5].index == 5);
  CHECK(sweep_run_name("r-abc12", points[5]) == "r-abc12-5");
}

TEST_CASE("sweep: parameter names become KTRAIN_PARAM_ variables") {
  CHECK(param_env_name("lr") == "KTRAIN_PARAM_LR");
  CHECK(param_env_name("warmup-steps") == "KTRAIN_PARAM_WARMUP_STEPS");
}

TEST_CASE("sweep: placeholders are replaced everywhere in the command, values never re-expanded") {
  auto cmd =
      substitute_params({"python", "train.py", "--lr={lr}", "{batch}", "{lr}{lr}", "{other}"},
                        {{"lr", "{lr}x"}, {"batch", "256"}});
  CHECK(cmd == std::vector<std::string>{"python", "train.py", "--lr={lr}x", "256", "{lr}x{lr}x",
                                        "{other}"});
}
