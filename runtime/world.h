#pragma once
// The world of a job: every node's rank, process count and address, the global
// ranks that follow from them, and the master address and port the workers use.

#include <string>
#include <vector>

#include "runtime/message.h"

namespace ktrain::launch {

/// The most nodes a job may have, and processes a node may run (as the
/// configuration allows them).
inline constexpr int kMaxNodes = 100000;
inline constexpr int kMaxProcsPerNode = 4096;

/// What one node announces when it joins.
struct NodeInfo {
  int node_rank = 0;
  int nnodes = 0;         ///< the node count this node was configured with
  int nproc = 0;          ///< its processes per node
  std::string framework;  ///< its framework name
  std::string addr;       ///< its address for endpoints
};

/// The agreed world, sent by node 0 to every node.
struct World {
  std::string run;
  std::vector<NodeInfo> nodes;  ///< indexed by node rank
  std::string master_addr;      ///< node 0's address, handed to workers
  int master_port = 0;
  std::string nccl_id_hex;  ///< NCCL unique id for the full preflight; empty otherwise

  int nnodes() const { return static_cast<int>(nodes.size()); }
  /// Total number of workers.
  int world_size() const;
  /// Global rank of local rank 0 on `node_rank`.
  int first_rank(int node_rank) const;
  /// Endpoint "addr:port" of every worker in global rank order: global rank r gets
  /// port master_port + 1 + r on its node's address (unique even when several
  /// nodes share one address, as on the local backend).
  std::vector<std::string> endpoints() const;
};

/// Checks the arrivals against the expected node count and builds the world.
/// Throws LaunchError(76) naming duplicate, missing or out-of-range ranks and
/// nodes that disagree on node count, processes per node or framework.
World build_world(const std::string& run, int nnodes, const std::vector<NodeInfo>& arrived,
                  int master_port);

/// Returns "3, 5 and 7" style list of the ranks in [0, nnodes) not in `arrived`.
std::vector<int> missing_ranks(int nnodes, const std::vector<NodeInfo>& arrived);

/// Returns "1, 2 and 4" for {1, 2, 4}.
std::string join_ranks(const std::vector<int>& ranks);

/// Serializes the world into a "world" message.
Message world_message(const World& w);

/// Parses a "world" message; throws LaunchError(76) when malformed.
World parse_world(const Message& m);

}  // namespace ktrain::launch
