// ktrain-gpucheck: the GPU helper of ktrain-launch. Runs the driver and NCCL
// calls in a process of their own, so that a crash cannot take the launcher down.
//   ktrain-gpucheck count
//   ktrain-gpucheck quick --gpus N
//   ktrain-gpucheck allreduce --nranks N --first-rank R --gpus G (--make-id | --id HEX)
//                             [--min-busbw GBPS]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/gpucheck/checks.h"

namespace {

int usage() {
  std::printf(
      "error usage: ktrain-gpucheck count | quick --gpus N | allreduce --nranks N "
      "--first-rank R --gpus G (--make-id | --id HEX) [--min-busbw GBPS]\n");
  return 78;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ktrain::launch::gpucheck;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  const std::string mode = args[0];
  AllReduceOptions o;
  int gpus = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : ""; };
    if (a == "--gpus") {
      gpus = o.gpus = std::atoi(next().c_str());
    } else if (a == "--nranks") {
      o.nranks = std::atoi(next().c_str());
    } else if (a == "--first-rank") {
      o.first_rank = std::atoi(next().c_str());
    } else if (a == "--id") {
      o.id_hex = next();
    } else if (a == "--make-id") {
      o.make_id = true;
    } else if (a == "--min-busbw") {
      o.min_busbw = std::atof(next().c_str());
    } else {
      return usage();
    }
  }
  if (mode == "count") return check_count();
  if (mode == "quick" && gpus > 0) return check_quick(gpus);
  if (mode == "allreduce" && o.gpus > 0 && o.nranks >= o.gpus && (o.make_id || !o.id_hex.empty())) {
    return check_allreduce(o, ktrain::launch::environment_map());
  }
  return usage();
}
