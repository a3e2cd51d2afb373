#pragma once
// WebSocket connections (RFC 6455) for the API server's streaming subresources (exec,
// port-forward): the HTTP/1.1 upgrade carries a Request's URL, headers (credentials)
// and TLS settings, then binary messages flow both ways. Boost.Beast does the
// handshake and the framing over a net::Tunnel (TCP, and TLS for https).

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "net/http.h"

namespace ktrain::net {

/// The server answered the upgrade with something other than 101 Switching Protocols.
class UpgradeRefused : public Error {
 public:
  UpgradeRefused(const std::string& message, int status, std::string body)
      : Error(message), status_(status), body_(std::move(body)) {}
  int status() const { return status_; }
  /// The answer's body (a metav1.Status from an API server).
  const std::string& body() const { return body_; }

 private:
  int status_;
  std::string body_;
};

class WebSocket {
 public:
  /// Connects to `req.url`, asks to upgrade with `req.headers` and the subprotocols
  /// `protocols` (in order of preference), and returns once the server agreed, within
  /// req.connect_timeout plus the same again for the answer. Throws TransportError
  /// below HTTP, UpgradeRefused for another answer.
  static std::unique_ptr<WebSocket> open(const Request& req,
                                         const std::vector<std::string>& protocols);
  ~WebSocket();
  WebSocket(const WebSocket&) = delete;
  WebSocket& operator=(const WebSocket&) = delete;

  /// The subprotocol the server chose ("" when it named none).
  const std::string& protocol() const;
  /// Queues one binary message; false once the connection is closed. Thread-safe.
  bool send(std::string message);
  /// Waits for the next message; false once the connection is closed (see error()).
  /// One caller at a time.
  bool receive(std::string& message);
  /// The same, waiting no later than `deadline`: false with `timed_out` set when no
  /// message came by then (the connection stays open).
  bool receive(std::string& message, std::chrono::steady_clock::time_point deadline,
               bool& timed_out);
  /// Sends a normal close and waits (up to a second) for the server's.
  void close();
  /// Why the connection ended: "" for a close that either side asked for, else what
  /// went wrong ("the connection to HOST was lost (...)").
  std::string error() const;

 private:
  struct Impl;
  explicit WebSocket(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktrain::net
