#pragma once
// A connection to a server (TCP, and TLS for https) relayed to a local socket, for
// protocols that take over the connection after an HTTP upgrade (WebSocket exec and
// port-forward): the caller speaks plain bytes on its end of a socket pair, and a
// thread moves them to and from the server, encrypting on the way. TLS is OpenSSL's,
// loaded when first used (as libcurl is), with the Request's TLS settings: CA, client
// certificate, server name, insecure-skip-tls-verify.

#include <memory>
#include <string>

#include "net/http.h"

namespace ktrain::net {

class Tunnel {
 public:
  /// Connects to the host of `req.url` (http, https, ws, wss; default ports 80 and 443)
  /// within req.connect_timeout, completes TLS for https/wss, and starts relaying.
  /// Throws TransportError (resolve, connect, TLS, timeout) naming the host.
  static std::unique_ptr<Tunnel> open(const Request& req);
  /// Stops relaying and closes both connections.
  ~Tunnel();
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  /// The caller's end of the socket pair; the caller owns it from then on (once).
  int take_local_fd();
  /// Why relaying ended ("" while it runs, or when it ended because either side closed
  /// normally): "the connection to HOST was lost (...)".
  std::string failure() const;

 private:
  struct Impl;
  explicit Tunnel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktrain::net
