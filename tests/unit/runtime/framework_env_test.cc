#include "runtime/framework_env.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace ktrain::launch;

namespace {

// Two nodes; the worker checked is the last one on node 1.
World two_nodes(int nproc) {
  std::vector<NodeInfo> nodes{{0, 2, nproc, "x", "10.0.0.1"}, {1, 2, nproc, "x", "10.0.0.2"}};
  return build_world("bert-7f3k2", 2, nodes, 29500);
}

std::string render(const EnvList& env) {
  std::string out;
  for (const auto& [k, v] : env) out += k + "=" + v + "\n";
  return out;
}

// Compares with tests/unit/runtime/golden/<name>; KTRAIN_UPDATE_GOLDEN=1 rewrites it.
void check_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(KTRAIN_SOURCE_DIR) + "/tests/unit/runtime/golden/" + name;
  if (const char* u = std::getenv("KTRAIN_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << actual;
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_MESSAGE(ss.str() == actual, "golden " << name << " differs; actual:\n" << actual);
}

const std::map<std::string, std::string> kParent{{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}};

}  // namespace

TEST_CASE("framework env: each framework matches its golden table (2 nodes x 2 workers, 2 GPUs)") {
  World w = two_nodes(2);
  WorkerPlace last{1, 1, 2};
  check_golden("pytorch.env", render(worker_env(w, last, Framework::kPytorch, kParent)));
  check_golden("paddle.env", render(worker_env(w, last, Framework::kPaddle, kParent)));
  check_golden("jax.env", render(worker_env(w, last, Framework::kJax, kParent)));
  check_golden("none.env", render(worker_env(w, last, Framework::kNone, kParent)));
  // TensorFlow: one process per node that drives both GPUs.
  check_golden("tensorflow.env", render(worker_env(two_nodes(1), WorkerPlace{1, 0, 2},
                                                   Framework::kTensorflow, kParent)));
  // Without GPUs: Paddle falls back to gloo; nobody gets CUDA_VISIBLE_DEVICES.
  check_golden("paddle-cpu.env",
               render(worker_env(w, WorkerPlace{1, 1, 0}, Framework::kPaddle, {})));
}

TEST_CASE("framework env: torchrun conventions that scripts rely on") {
  World w = two_nodes(2);
  auto env = worker_env(w, WorkerPlace{0, 1, 0}, Framework::kPytorch, {});
  std::map<std::string, std::string> m(env.begin(), env.end());
  CHECK(m["RANK"] == "1");
  CHECK(m["LOCAL_RANK"] == "1");
  CHECK(m["WORLD_SIZE"] == "4");
  CHECK(m["OMP_NUM_THREADS"] == "1");  // torchrun's default with several processes
  CHECK(m["TORCHELASTIC_USE_AGENT_STORE"] == "False");
  auto one = worker_env(two_nodes(1), WorkerPlace{0, 0, 0}, Framework::kPytorch,
                        {{"OMP_NUM_THREADS", "8"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}});
  std::map<std::string, std::string> m1(one.begin(), one.end());
  CHECK(m1["OMP_NUM_THREADS"] == "8");
  CHECK(m1["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "3");
  CHECK(m1.count("CUDA_VISIBLE_DEVICES") == 0);
}

TEST_CASE("framework env: GPUs are shared evenly, through CUDA_VISIBLE_DEVICES when set") {
  CHECK(worker_gpus(1, 4, 8, {}) == std::vector<std::string>{"2", "3"});
  CHECK(worker_gpus(2, 4, 4, kParent) == std::vector<std::string>{"6"});
  CHECK(worker_gpus(0, 1, 4, kParent) == std::vector<std::string>{"4", "5", "6", "7"});
  CHECK(worker_gpus(0, 2, 0, kParent).empty());
}
