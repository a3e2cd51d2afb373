#pragma once
// Port-forward to a pod through the API server. Where it tunnels SPDY in a WebSocket
// (SPDY/3.1+portforward.k8s.io: Kubernetes 1.31+, as kubectl 1.31+ asks for it), every
// local connection is a pair of SPDY streams (error and data) in one shared WebSocket,
// and a local half-close reaches the pod. Elsewhere (the server answers 400 to that
// subprotocol), each connection is a WebSocket of its own in the kubelet's
// v4.channel.k8s.io protocol (forward_connection in kube/streams.h).

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kube/client.h"

namespace ktrain::kube {

/// The tunnelled subprotocol.
inline constexpr const char* kPortForwardTunnelProtocol = "SPDY/3.1+portforward.k8s.io";

class PortForwarder {
 public:
  /// `log`, when set, is told which protocol is used and when the tunnel is reopened.
  PortForwarder(Client& client, std::string ns, std::string pod,
                std::function<void(const std::string&)> log = {});
  ~PortForwarder();
  PortForwarder(const PortForwarder&) = delete;
  PortForwarder& operator=(const PortForwarder&) = delete;

  /// Opens the shared connection (or learns that the server has none), so that a refusal
  /// (forbidden, no such pod) shows before any local connection. Throws ApiError/Error.
  void connect();
  /// The protocol in use: kPortForwardTunnelProtocol or kPortForwardProtocol ("" before
  /// connect()).
  std::string protocol() const;
  /// Relays the connected socket `fd` to `port` in the pod until the pod's side has
  /// ended (tunnel: a local half-close is passed on; v4: either side's end ends it).
  /// Returns "" after a normal end, or why it ended (the pod's words: nothing listens
  /// there; the connection to the API server was lost). Thread-safe: one call per
  /// local connection, each from a thread of its own. A tunnel that ended is reopened
  /// for the next connection. Throws ApiError/Error when no stream can be opened.
  std::string forward(int port, int fd);

  /// Ends the shared connection: forward() calls return. Idempotent.
  void close();

  struct Tunnel;

 private:
  std::shared_ptr<Tunnel> tunnel();

  Client& client_;
  std::string ns_, pod_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::string protocol_;
  std::shared_ptr<Tunnel> tunnel_;
  bool closed_ = false;
};

}  // namespace ktrain::kube
