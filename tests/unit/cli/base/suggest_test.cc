#include "base/suggest.h"

#include <doctest/doctest.h>

using ktrain::closest_match;
using ktrain::edit_distance;

TEST_CASE("suggest: edit distance counts transpositions as one edit") {
  CHECK(edit_distance("gpus", "gpus") == 0);
  CHECK(edit_distance("gpu", "gpus") == 1);
  CHECK(edit_distance("gups", "gpus") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("suggest: close keys are suggested, distant ones are not") {
  const std::vector<std::string> keys = {"command", "nodes", "gpus", "memory", "nodeSelector"};
  CHECK(closest_match("gpu", keys) == "gpus");
  CHECK(closest_match("comand", keys) == "command");
  CHECK(closest_match("memroy", keys) == "memory");
  CHECK(closest_match("nodeselector", keys) == "nodeSelector");
  CHECK(closest_match("banana", keys) == "");
  CHECK(closest_match("x", keys) == "");
}
