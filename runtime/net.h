#pragma once
// Small TCP helpers over non-blocking sockets, and a framed message connection.

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/message.h"
#include "runtime/session.h"

namespace ktrain::launch {

/// Milliseconds on the monotonic clock.
int64_t now_ms();

/// Listens on `ipv4`:`port` (non-blocking, close-on-exec): the pod's own address, so
/// that pods sharing a network (hostNetwork, or a node whose pods share the host's)
/// each have their port. An empty `ipv4`, one that is no IPv4 address, or one that is
/// not this host's (EADDRNOTAVAIL) listens on 0.0.0.0. Throws LaunchError(76) when the
/// port cannot be bound.
int listen_tcp(int port, const std::string& ipv4 = "");

/// Connects to `ipv4`:`port` within `timeout_ms`. Returns the non-blocking fd, or
/// -1 with errno set (ECONNREFUSED, ETIMEDOUT, ...).
int connect_tcp(const std::string& ipv4, int port, int timeout_ms);

/// Turns on TCP keepalive (probes after 30 s idle, every 10 s, 3 misses), so that a
/// peer that vanished without closing its connection is noticed within about a minute.
void set_keepalive(int fd);

/// Returns the peer's IPv4 address of a connected socket ("" when unknown).
std::string peer_address(int fd);

/// Returns the local IPv4 address of a connected socket ("" when unknown).
std::string local_address(int fd);

/// A framed message connection over a non-blocking socket. Owns the fd. Until
/// secure() it accepts frames of at most kMaxHandshakeFrame bytes; afterwards
/// kMaxFrame, and every message in either direction is sealed by the Session.
class Connection {
 public:
  explicit Connection(int fd = -1) : fd_(fd), reader_(kMaxHandshakeFrame) {}
  ~Connection();
  Connection(Connection&& o) noexcept;
  Connection& operator=(Connection&& o) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  /// Closes the socket.
  void close();
  /// From now on seals every message sent and opens every message taken with
  /// `session`, and accepts frames of up to kMaxFrame bytes.
  void secure(Session session);
  /// Sends a message, waiting at most `timeout_ms` for the socket to take it.
  /// Returns false when the peer is gone or the time ran out.
  bool send(const Message& m, int timeout_ms = 5000);
  /// Reads what is available without blocking, but never more than the frame
  /// limit allows to hold (a frame's header is read and checked before its body).
  /// Returns false on EOF or error (messages already complete stay available to
  /// take()).
  bool read_available();
  /// Takes the next complete message; throws LaunchError(76) on a malformed or
  /// oversized frame, or, once secure, on a message that fails authentication.
  bool take(Message& out);
  /// Waits up to `timeout_ms` for one message. Returns nullopt on EOF, error or timeout;
  /// `eof` tells which.
  std::optional<Message> receive(int timeout_ms, bool* eof = nullptr);

 private:
  int fd_;
  FrameReader reader_;
  std::optional<Session> session_;
};

}  // namespace ktrain::launch
