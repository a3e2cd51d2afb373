#include "runtime/framework_env.h"

namespace ktrain::launch {
namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

const std::string* parent_value(const std::map<std::string, std::string>& parent,
                                const std::string& name) {
  auto it = parent.find(name);
  return it == parent.end() ? nullptr : &it->second;
}

// TF_CONFIG as MultiWorkerMirroredStrategy reads it: every worker in the cluster
// spec, and this process's task.
std::string tf_config(const std::vector<std::string>& endpoints, int rank) {
  std::string out = R"({"cluster":{"worker":[)";
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (i > 0) out += ',';
    out += '"' + endpoints[i] + '"';
  }
  out += R"(]},"task":{"type":"worker","index":)" + std::to_string(rank) + "}}";
  return out;
}

}  // namespace

std::vector<std::string> worker_gpus(int local_rank, int nproc, int gpus,
                                     const std::map<std::string, std::string>& parent) {
  std::vector<std::string> visible;
  if (const std::string* v = parent_value(parent, "CUDA_VISIBLE_DEVICES"); v && !v->empty()) {
    size_t start = 0;
    while (start <= v->size()) {
      size_t comma = v->find(',', start);
      if (comma == std::string::npos) comma = v->size();
      visible.push_back(v->substr(start, comma - start));
      start = comma + 1;
    }
  }
  std::vector<std::string> out;
  if (gpus <= 0 || nproc <= 0) return out;
  int per = gpus / nproc;
  if (per < 1) per = 1;
  for (int g = local_rank * per; g < (local_rank + 1) * per && g < gpus; ++g) {
    if (static_cast<size_t>(g) < visible.size()) {
      out.push_back(visible[static_cast<size_t>(g)]);
    } else {
      out.push_back(std::to_string(g));
    }
  }
  return out;
}

EnvList worker_env(const World& world, const WorkerPlace& place, Framework framework,
                   const std::map<std::string, std::string>& parent) {
  const NodeInfo& node = world.nodes.at(static_cast<size_t>(place.node_rank));
  const int nproc = node.nproc;
  const int rank = world.first_rank(place.node_rank) + place.local_rank;
  const int world_size = world.world_size();
  const std::vector<std::string> endpoints = world.endpoints();
  const std::string master_port = std::to_string(world.master_port);
  const std::vector<std::string> gpus =
      worker_gpus(place.local_rank, nproc, place.gpus_per_node, parent);

  EnvList env;
  auto set = [&env](const std::string& k, const std::string& v) { env.emplace_back(k, v); };

  switch (framework) {
    case Framework::kPytorch: {
      // torch/distributed/elastic/agent/server/local_elastic_agent.py _start_workers,
      // with one role ("default"), no restarts, and no agent-hosted store: rank 0's
      // worker hosts the TCPStore at MASTER_ADDR:MASTER_PORT itself.
      set("LOCAL_RANK", std::to_string(place.local_rank));
      set("RANK", std::to_string(rank));
      set("GROUP_RANK", std::to_string(place.node_rank));
      set("ROLE_RANK", std::to_string(rank));
      set("ROLE_NAME", "default");
      set("LOCAL_WORLD_SIZE", std::to_string(nproc));
      set("WORLD_SIZE", std::to_string(world_size));
      set("GROUP_WORLD_SIZE", std::to_string(world.nnodes()));
      set("ROLE_WORLD_SIZE", std::to_string(world_size));
      set("MASTER_ADDR", world.master_addr);
      set("MASTER_PORT", master_port);
      set("TORCHELASTIC_RESTART_COUNT", "0");
      set("TORCHELASTIC_MAX_RESTARTS", "0");
      set("TORCHELASTIC_RUN_ID", world.run);
      set("TORCHELASTIC_USE_AGENT_STORE", "False");
      const std::string* async = parent_value(parent, "TORCH_NCCL_ASYNC_ERROR_HANDLING");
      set("TORCH_NCCL_ASYNC_ERROR_HANDLING", async ? *async : "1");
      // torch/distributed/run.py: OMP_NUM_THREADS=1 when unset and nproc > 1.
      if (const std::string* omp = parent_value(parent, "OMP_NUM_THREADS")) {
        set("OMP_NUM_THREADS", *omp);
      } else if (nproc > 1) {
        set("OMP_NUM_THREADS", "1");
      }
      break;
    }
    case Framework::kPaddle: {
      // python/paddle/distributed/launch/controllers/collective.py _build_pod_with_master.
      set("PADDLE_MASTER", world.master_addr + ":" + master_port);
      set("PADDLE_GLOBAL_SIZE", std::to_string(world_size));
      set("PADDLE_LOCAL_SIZE", std::to_string(nproc));
      set("PADDLE_GLOBAL_RANK", std::to_string(rank));
      set("PADDLE_LOCAL_RANK", std::to_string(place.local_rank));
      set("PADDLE_NNODES", std::to_string(world.nnodes()));
      set("PADDLE_TRAINER_ENDPOINTS", join(endpoints, ","));
      set("PADDLE_CURRENT_ENDPOINT", endpoints.at(static_cast<size_t>(rank)));
      set("PADDLE_TRAINER_ID", std::to_string(rank));
      set("PADDLE_TRAINERS_NUM", std::to_string(world_size));
      set("PADDLE_RANK_IN_NODE", std::to_string(place.local_rank));
      if (place.gpus_per_node > 0) {
        // Device indices within the visible devices, as Paddle's launcher selects them.
        std::vector<std::string> idx;
        int per = place.gpus_per_node / nproc;
        for (int g = place.local_rank * per; g < (place.local_rank + 1) * per; ++g) {
          idx.push_back(std::to_string(g));
        }
        set("FLAGS_selected_gpus", join(idx, ","));
      } else {
        set("PADDLE_DISTRI_BACKEND", "gloo");
      }
      break;
    }
    case Framework::kTensorflow:
      set("TF_CONFIG", tf_config(endpoints, rank));
      break;
    case Framework::kJax:
      // jax.distributed.initialize() reads JAX_COORDINATOR_ADDRESS itself; the
      // process count and id are passed by the script (JAX_NUM_PROCESSES /
      // JAX_PROCESS_ID is the common convention, e.g. Kubeflow's JAX runtime).
      set("JAX_COORDINATOR_ADDRESS", world.master_addr + ":" + master_port);
      set("JAX_NUM_PROCESSES", std::to_string(world_size));
      set("JAX_PROCESS_ID", std::to_string(rank));
      break;
    case Framework::kNone:
      break;
  }
  // PyTorch and Paddle workers see every GPU of the node and pick theirs by
  // LOCAL_RANK / FLAGS_selected_gpus (torch.cuda.set_device(LOCAL_RANK) must keep
  // working); the others get only their own GPUs.
  if (!gpus.empty() && framework != Framework::kPytorch && framework != Framework::kPaddle) {
    set("CUDA_VISIBLE_DEVICES", join(gpus, ","));
  }

  set("KTRAIN_RANK", std::to_string(rank));
  set("KTRAIN_LOCAL_RANK", std::to_string(place.local_rank));
  set("KTRAIN_WORLD_SIZE", std::to_string(world_size));
  set("KTRAIN_LOCAL_WORLD_SIZE", std::to_string(nproc));
  set("KTRAIN_NODE_RANK", std::to_string(place.node_rank));
  set("KTRAIN_NNODES", std::to_string(world.nnodes()));
  set("KTRAIN_MASTER_ADDR", world.master_addr);
  set("KTRAIN_MASTER_PORT", master_port);
  set("KTRAIN_WORKER_ADDR", node.addr);
  set("KTRAIN_WORKER_ENDPOINT", endpoints.at(static_cast<size_t>(rank)));
  set("KTRAIN_WORKER_ENDPOINTS", join(endpoints, ","));
  if (!gpus.empty()) set("KTRAIN_GPU_IDS", join(gpus, ","));
  return env;
}

}  // namespace ktrain::launch
