#pragma once
// The GPU checks of ktrain-gpucheck. Each prints "info"/"error"/fact lines on
// stdout and returns the exit status (0 passed, 77 failed).

#include <map>
#include <string>

namespace ktrain::launch::gpucheck {

/// `count`: prints "count N" (the GPUs the driver sees).
int check_count();

/// `quick`: on each of the first `gpus` GPUs, allocate, fill, copy device to
/// device (timed with events), verify and free; prints the bandwidth against the
/// GPU's peak (from its memory clock and bus width).
int check_quick(int gpus);

/// Options of `allreduce`.
struct AllReduceOptions {
  int nranks = 0;        ///< GPUs in the whole job
  int first_rank = 0;    ///< NCCL rank of this node's GPU 0
  int gpus = 0;          ///< GPUs on this node, one NCCL rank each
  std::string id_hex;    ///< the NCCL unique id (from node 0)
  bool make_id = false;  ///< make the id here and print "nccl_id HEX" first
  double min_busbw = 0;  ///< GB/s at the largest size; 0: no minimum
};

/// `allreduce`: an NCCL communicator over the job; sums known data at several
/// sizes, checks every element, prints algbw/busbw as nccl-tests does.
int check_allreduce(const AllReduceOptions& o, const std::map<std::string, std::string>& env);

}  // namespace ktrain::launch::gpucheck
