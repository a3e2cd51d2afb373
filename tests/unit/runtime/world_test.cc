#include "runtime/world.h"

#include <doctest/doctest.h>

#include "runtime/error.h"

using namespace ktrain::launch;

namespace {
NodeInfo node(int rank, int nproc = 4, int nnodes = 3, const std::string& fw = "pytorch") {
  return NodeInfo{rank, nnodes, nproc, fw, "10.0.0." + std::to_string(rank + 1)};
}

std::string world_error(int nnodes, const std::vector<NodeInfo>& arrived) {
  try {
    build_world("run", nnodes, arrived, 29500);
  } catch (const LaunchError& e) {
    CHECK(e.status() == 76);
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("world: ranks follow node order whatever the arrival order") {
  World w = build_world("run", 3, {node(2), node(0), node(1)}, 29500);
  CHECK(w.nnodes() == 3);
  CHECK(w.world_size() == 12);
  CHECK(w.first_rank(0) == 0);
  CHECK(w.first_rank(2) == 8);
  CHECK(w.master_addr == "10.0.0.1");
  auto eps = w.endpoints();
  REQUIRE(eps.size() == 12);
  CHECK(eps[0] == "10.0.0.1:29501");
  CHECK(eps[5] == "10.0.0.2:29506");
  CHECK(eps[11] == "10.0.0.3:29512");
}

TEST_CASE("world: duplicate, missing, out-of-range and mismatched nodes are named") {
  CHECK(world_error(3, {node(0), node(1), node(1)}) ==
        "node rank 1 joined twice (from 10.0.0.2 and 10.0.0.2)");
  CHECK(world_error(5, {node(0, 4, 5), node(2, 4, 5)}) ==
        "nodes 1, 3 and 4 did not join (2 of 5 joined)");
  CHECK(world_error(3, {node(0), node(1), node(7)}).find("outside 0..2") != std::string::npos);
  CHECK(world_error(3, {node(0), node(1, 2), node(2)}) ==
        "nodes disagree on processes per node: node 0 has 4, node 1 has 2");
  CHECK(world_error(3, {node(0), node(1, 4, 4), node(2)}) ==
        "node 1 expects 4 nodes, node 0 expects 3");
  CHECK(world_error(3, {node(0), node(1, 4, 3, "jax"), node(2)}).find("framework") !=
        std::string::npos);
  CHECK(missing_ranks(4, {node(3, 4, 4), node(0, 4, 4)}) == std::vector<int>{1, 2});
  CHECK(join_ranks({7}) == "7");
}

TEST_CASE("world: survives its message round trip") {
  World w = build_world("bert", 3, {node(0), node(1), node(2)}, 29500);
  w.nccl_id_hex = "abcd";
  World back = parse_world(world_message(w));
  CHECK(back.run == "bert");
  CHECK(back.nnodes() == 3);
  CHECK(back.master_addr == w.master_addr);
  CHECK(back.master_port == 29500);
  CHECK(back.nccl_id_hex == "abcd");
  CHECK(back.endpoints() == w.endpoints());
  CHECK(back.nodes[2].framework == "pytorch");
  Message bad = world_message(w);
  bad.fields.pop_back();
  CHECK_THROWS_AS(parse_world(bad), LaunchError);
}

TEST_CASE("world: numbers that would wrap around an int are refused") {
  World w = build_world("bert", 2, {node(0, 4, 2), node(1, 4, 2)}, 29500);
  Message port = world_message(w);
  for (auto& [k, v] : port.fields) {
    if (k == "master_port") v = "4294997796";  // 29500 + 2^32
  }
  CHECK_THROWS_AS(parse_world(port), LaunchError);
  Message nproc = world_message(w);
  for (auto& [k, v] : nproc.fields) {
    if (k == "node.1") v = "4294967297 pytorch 10.0.0.2";  // 1 + 2^32
  }
  CHECK_THROWS_AS(parse_world(nproc), LaunchError);
  Message trailing = world_message(w);
  for (auto& [k, v] : trailing.fields) {
    if (k == "node.0") v = "4x pytorch 10.0.0.1";
  }
  CHECK_THROWS_AS(parse_world(trailing), LaunchError);
}
