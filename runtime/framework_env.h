#pragma once
// The environment of each worker, the way each framework's own launcher sets it:
// PyTorch as torchrun, Paddle as paddle.distributed.launch, TensorFlow TF_CONFIG,
// JAX's coordinator variables; plus KTRAIN_* for every framework.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config.h"
#include "runtime/world.h"

namespace ktrain::launch {

/// Ordered (name, value) pairs to set on top of the launcher's own environment.
using EnvList = std::vector<std::pair<std::string, std::string>>;

/// Where one worker sits in the world.
struct WorkerPlace {
  int node_rank = 0;
  int local_rank = 0;
  int gpus_per_node = 0;  ///< GPUs on this node shared by its workers (0: none)
};

/// Returns the variables to set for the worker at `place`. `parent` is the
/// launcher's environment (for CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS and
/// TORCH_NCCL_ASYNC_ERROR_HANDLING, which the frameworks' launchers also consult).
EnvList worker_env(const World& world, const WorkerPlace& place, Framework framework,
                   const std::map<std::string, std::string>& parent);

/// Returns the GPU ids (as CUDA_VISIBLE_DEVICES names them) of the worker with
/// `local_rank` when `gpus` GPUs are shared evenly by `nproc` workers.
std::vector<std::string> worker_gpus(int local_rank, int nproc, int gpus,
                                     const std::map<std::string, std::string>& parent);

}  // namespace ktrain::launch
