#include "runtime/world.h"

#include <algorithm>
#include <map>

#include "runtime/error.h"

namespace ktrain::launch {

int World::world_size() const {
  int n = 0;
  for (const auto& node : nodes) n += node.nproc;
  return n;
}

int World::first_rank(int node_rank) const {
  int n = 0;
  for (int r = 0; r < node_rank; ++r) n += nodes[static_cast<size_t>(r)].nproc;
  return n;
}

std::vector<std::string> World::endpoints() const {
  std::vector<std::string> out;
  int rank = 0;
  for (const auto& node : nodes) {
    for (int i = 0; i < node.nproc; ++i, ++rank) {
      out.push_back(node.addr + ":" + std::to_string(master_port + 1 + rank));
    }
  }
  return out;
}

std::vector<int> missing_ranks(int nnodes, const std::vector<NodeInfo>& arrived) {
  std::vector<bool> seen(static_cast<size_t>(nnodes), false);
  for (const auto& n : arrived) {
    if (n.node_rank >= 0 && n.node_rank < nnodes) seen[static_cast<size_t>(n.node_rank)] = true;
  }
  std::vector<int> out;
  for (int r = 0; r < nnodes; ++r) {
    if (!seen[static_cast<size_t>(r)]) out.push_back(r);
  }
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += (i + 1 == ranks.size()) ? " and " : ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

World build_world(const std::string& run, int nnodes, const std::vector<NodeInfo>& arrived,
                  int master_port) {
  auto fail = [](const std::string& m) { throw LaunchError(exit_status::kRendezvous, m); };
  std::map<int, const NodeInfo*> by_rank;
  for (const auto& n : arrived) {
    if (n.node_rank < 0 || n.node_rank >= nnodes) {
      fail("node rank " + std::to_string(n.node_rank) + " (from " + n.addr + ") is outside 0.." +
           std::to_string(nnodes - 1));
    }
    if (n.nnodes != nnodes) {
      fail("node " + std::to_string(n.node_rank) + " expects " + std::to_string(n.nnodes) +
           " nodes, node 0 expects " + std::to_string(nnodes));
    }
    auto [it, fresh] = by_rank.emplace(n.node_rank, &n);
    if (!fresh) {
      fail("node rank " + std::to_string(n.node_rank) + " joined twice (from " + it->second->addr +
           " and " + n.addr + ")");
    }
  }
  std::vector<int> missing = missing_ranks(nnodes, arrived);
  if (!missing.empty()) {
    fail("node" + std::string(missing.size() > 1 ? "s " : " ") + join_ranks(missing) +
         " did not join (" + std::to_string(nnodes - static_cast<int>(missing.size())) + " of " +
         std::to_string(nnodes) + " joined)");
  }
  const NodeInfo& first = *by_rank.at(0);
  for (const auto& [rank, n] : by_rank) {
    if (n->nproc != first.nproc) {
      fail("nodes disagree on processes per node: node 0 has " + std::to_string(first.nproc) +
           ", node " + std::to_string(rank) + " has " + std::to_string(n->nproc));
    }
    if (n->framework != first.framework) {
      fail("nodes disagree on the framework: node 0 uses " + first.framework + ", node " +
           std::to_string(rank) + " uses " + n->framework);
    }
  }
  if (master_port + first.nproc * nnodes > 65535) {
    fail("the master port " + std::to_string(master_port) + " plus one port per worker (" +
         std::to_string(first.nproc * nnodes) + ") goes past 65535");
  }
  World w;
  w.run = run;
  w.master_port = master_port;
  for (const auto& [rank, n] : by_rank) w.nodes.push_back(*n);
  w.master_addr = w.nodes[0].addr;
  return w;
}

Message world_message(const World& w) {
  Message m;
  m.type = "world";
  m.set("run", w.run);
  m.set("nnodes", std::to_string(w.nnodes()));
  m.set("master_addr", w.master_addr);
  m.set("master_port", std::to_string(w.master_port));
  m.set("nccl_id", w.nccl_id_hex);
  for (const auto& n : w.nodes) {
    m.set("node." + std::to_string(n.node_rank),
          std::to_string(n.nproc) + " " + n.framework + " " + n.addr);
  }
  return m;
}

World parse_world(const Message& m) {
  auto fail = [](const std::string& s) {
    throw LaunchError(exit_status::kRendezvous, "malformed world from node 0: " + s);
  };
  if (m.type != "world") fail("expected a 'world' message, got '" + m.type + "'");
  World w;
  w.run = m.get("run");
  long nnodes = m.get_int("nnodes", 1, kMaxNodes);
  w.master_addr = m.get("master_addr");
  w.master_port = static_cast<int>(m.get_int("master_port", 1, 65535));
  w.nccl_id_hex = m.get("nccl_id");
  for (long r = 0; r < nnodes; ++r) {
    const std::string& v = m.get("node." + std::to_string(r));
    size_t a = v.find(' '), b = a == std::string::npos ? a : v.find(' ', a + 1);
    if (b == std::string::npos) fail("bad node entry '" + v + "'");
    NodeInfo n;
    n.node_rank = static_cast<int>(r);
    n.nnodes = static_cast<int>(nnodes);
    long nproc = 0;
    if (!parse_decimal(std::string_view(v).substr(0, a), 1, kMaxProcsPerNode, nproc)) {
      fail("bad process count in '" + v + "'");
    }
    n.nproc = static_cast<int>(nproc);
    n.framework = v.substr(a + 1, b - a - 1);
    n.addr = v.substr(b + 1);
    w.nodes.push_back(n);
  }
  return w;
}

}  // namespace ktrain::launch
