#pragma once
// How a node tells the others that it failed or finished, and hears that they
// did, over the connections the rendezvous left open. Those connections are
// secure (Connection::secure): a message that fails authentication counts as a
// lost connection, and its content is not used.

#include <optional>
#include <string>
#include <vector>

#include "runtime/net.h"

namespace ktrain::launch {

/// The supervisor's view of the other nodes; abstract so tests can use a fake.
/// The real ones are ServerLink (node 0) and ClientLink (every other node).
class PeerLink {
 public:
  virtual ~PeerLink() = default;
  /// The descriptors to watch for reading.
  virtual std::vector<int> fds() const = 0;
  /// Reads from a readable `fd`; returns a cause when this node must stop because
  /// a peer failed or was lost.
  virtual std::optional<std::string> on_readable(int fd) = 0;
  /// Tells the other nodes that this node failed with `cause`.
  virtual void local_failed(const std::string& cause) = 0;
  /// Tells the other nodes that every worker here exited 0.
  virtual void local_done() = 0;
  /// Whether the job is finished as far as this node must wait for (node 0 waits
  /// for every node's report; the others only for their own workers).
  virtual bool all_done() const = 0;
};

/// A single node: nobody to tell.
class NoPeers : public PeerLink {
 public:
  std::vector<int> fds() const override { return {}; }
  std::optional<std::string> on_readable(int) override { return std::nullopt; }
  void local_failed(const std::string&) override {}
  void local_done() override {}
  bool all_done() const override { return true; }
};

/// Node 0: one connection per node; relays a node's failure to all the others.
class ServerLink : public PeerLink {
 public:
  /// `peers` is indexed by node rank; index 0 is unused.
  explicit ServerLink(std::vector<Connection>& peers);
  std::vector<int> fds() const override;
  std::optional<std::string> on_readable(int fd) override;
  void local_failed(const std::string& cause) override;
  void local_done() override { self_done_ = true; }
  bool all_done() const override;

 private:
  void stop_all(const std::string& cause, size_t except);
  std::vector<Connection>& peers_;
  std::vector<bool> done_;
  bool self_done_ = false;
};

/// Any other node: one connection to node 0.
class ClientLink : public PeerLink {
 public:
  explicit ClientLink(Connection& conn) : conn_(conn) {}
  std::vector<int> fds() const override;
  std::optional<std::string> on_readable(int fd) override;
  void local_failed(const std::string& cause) override;
  void local_done() override;
  bool all_done() const override { return done_; }

 private:
  Connection& conn_;
  bool done_ = false;
};

}  // namespace ktrain::launch
