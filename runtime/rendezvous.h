#pragma once
// The rendezvous: node 0 listens, every other node connects (retrying while DNS
// does not resolve yet or the port refuses), both sides prove they hold the
// per-run secret (HMAC-SHA256 challenge-response), node 0 checks the world and
// sends it to every node. The connections stay open for fail-fast messages.

#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/net.h"
#include "runtime/resolver.h"
#include "runtime/world.h"

namespace ktrain::launch {

/// Node 0's side of the rendezvous.
class RendezvousServer {
 public:
  /// Binds the rendezvous port; throws LaunchError(76) when it cannot.
  RendezvousServer(const Config& config, NodeInfo self);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  /// Waits for every node, checks the world and sends it to each node. Throws
  /// LaunchError(76) on timeout (naming the nodes that never arrived), on a
  /// duplicate rank or on nodes that disagree; the nodes already there are told.
  World gather(const std::string& nccl_id_hex);

  /// The connection to each node, indexed by node rank (index 0 is unused).
  std::vector<Connection>& peers() { return peers_; }

 private:
  const Config& config_;
  NodeInfo self_;
  int listen_fd_ = -1;
  std::vector<Connection> peers_;
};

/// Joins node 0's rendezvous as `self`; returns the world and leaves the open
/// connection in `conn`. Throws LaunchError(76) on timeout, a refused or wrong
/// secret, or when node 0 gives up.
World join_rendezvous(const Config& config, const NodeInfo& self, Connection& conn,
                      const ResolverOptions& resolver = {});

/// The proof node 0 sends for the client nonce `cnonce` and its own `snonce`.
std::string server_proof(const std::string& secret, const std::string& run,
                         const std::string& cnonce, const std::string& snonce);

/// The MAC a node sends over its hello body, binding both nonces.
std::string client_proof(const std::string& secret, const std::string& run,
                         const std::string& snonce, const std::string& cnonce,
                         const std::string& hello_body);

}  // namespace ktrain::launch
