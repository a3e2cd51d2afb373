#pragma once
// The rendezvous: node 0 listens, every other node connects (retrying while DNS
// does not resolve yet or the port refuses), both sides prove they hold the
// per-run secret (HMAC-SHA256 challenge-response), node 0 checks the world and
// sends it to every node. The connections stay open for fail-fast messages;
// every message after the handshake is authenticated (session.h).
//
// Anyone who can reach node 0's port can open connections, so until a peer has
// proved the secret node 0 grants it little: frames of 4 KiB, a few seconds to
// finish the handshake, and a place among a bounded number of such connections.

#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/net.h"
#include "runtime/resolver.h"
#include "runtime/world.h"

namespace ktrain::launch {

/// The version of the rendezvous protocol, sent in the hello; node 0 refuses a
/// node that speaks another one.
inline constexpr const char* kRendezvousProtocol = "2";

/// What node 0 grants connections that have not authenticated yet.
struct RendezvousLimits {
  /// Time from accept to a verified auth; a connection still in the handshake
  /// then is closed.
  int handshake_ms = 10000;
  /// Connections in the handshake at once; 0 means max_pending_connections(nnodes).
  /// One more closes the oldest of them.
  int max_pending = 0;
  /// Pause before accepting again after accept failed for want of descriptors or
  /// memory with no connection in the handshake left to close.
  int accept_pause_ms = 100;
};

/// Returns how many connections node 0 lets be in the handshake at once for a
/// job of `nnodes` nodes: 4 per node, at least 16, at most 4096.
int max_pending_connections(int nnodes);

/// Node 0's side of the rendezvous.
class RendezvousServer {
 public:
  /// Binds the rendezvous port; throws LaunchError(76) when it cannot.
  RendezvousServer(const Config& config, NodeInfo self, RendezvousLimits limits = {});
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  /// Waits for every node, checks the world and sends it to each node. Throws
  /// LaunchError(76) on timeout (naming the nodes that never arrived), on a
  /// duplicate rank or on nodes that disagree; the nodes already there are told.
  /// Stops listening when it returns or throws.
  World gather(const std::string& nccl_id_hex);

  /// The connection to each node, indexed by node rank (index 0 is unused).
  std::vector<Connection>& peers() { return peers_; }

 private:
  const Config& config_;
  NodeInfo self_;
  RendezvousLimits limits_;
  int listen_fd_ = -1;
  std::vector<Connection> peers_;
};

/// Joins node 0's rendezvous as `self`; returns the world and leaves the open
/// (secure) connection in `conn`. Throws LaunchError(76) on timeout, when node 0
/// proves a different secret, or when node 0, having proved the secret, refuses
/// this node or gives up. Whatever has not proved the secret cannot end the
/// rendezvous: a refusal or garbage from it only makes this node try again.
World join_rendezvous(const Config& config, const NodeInfo& self, Connection& conn,
                      const ResolverOptions& resolver = {});

/// What a node's hello says.
struct Hello {
  std::string version;
  std::string run;
  std::string cnonce;
  NodeInfo info;  ///< info.addr is "" when the node leaves it to node 0
};

/// Reads the fields of a hello (its type already checked); throws LaunchError(76)
/// naming a field that is missing, not a number or out of range.
Hello parse_hello(const Message& m);

/// The proof node 0 sends for the client nonce `cnonce` and its own `snonce`;
/// `run` is the run named in the node's hello.
std::string server_proof(const std::string& secret, const std::string& run,
                         const std::string& cnonce, const std::string& snonce);

/// The MAC a node sends over its hello body, binding both nonces.
std::string client_proof(const std::string& secret, const std::string& run,
                         const std::string& snonce, const std::string& cnonce,
                         const std::string& hello_body);

}  // namespace ktrain::launch
