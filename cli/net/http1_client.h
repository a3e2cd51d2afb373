#pragma once
// HTTP/1.1 to the API server on plain sockets and OpenSSL, without libcurl.
//
// Against a server that answers over HTTP/1.x (no HTTP/2 through ALPN), two things
// cost more through libcurl than the work itself:
// - many small requests (a submit of thousands of objects): libcurl's per-request
//   work and allocations were most of ktrain's CPU time;
// - hundreds of long-lived streams (following every rank), each needing a connection
//   of its own: through libcurl each held an easy handle and a TLS context of its
//   own, into which the CA bundle was loaded again.
// Here requests to a server share a pool of keep-alive connections and one TLS
// context, a connection holds only its TLS state and a few hundred bytes of parsing
// state, and everything runs on one loop thread.

#include <memory>
#include <string>
#include <vector>

#include "net/http.h"

namespace ktrain::net {

/// Options of an Http1Client.
struct Http1Options {
  std::string user_agent;
  /// Most connections kept per server for ordinary requests (as CurlOptions); a lean
  /// stream (Request::lean) always has a connection of its own, closed when it ends.
  std::size_t max_host_connections = 8;
};

/// Runs HTTP/1.1 requests from one loop thread. What it runs (can_run): a request
/// with its body in `body` (not body_reader), no proxy and no redirects, to an http
/// or https URL. Bodies of answers framed by chunked encoding, Content-Length or the
/// end of the connection. Connections are kept alive and reused; a request whose
/// reused connection turns out closed by the server before any answer is sent again
/// on a new one (the server never saw it). TLS as CurlTransport does it: the CA file
/// or PEM data (else the system's trust store), the server's name checked
/// (tls-server-name instead of the URL's host when set), a client certificate, or no
/// verification when insecure. Failures come back classified (TransportFailure).
/// Safe to call from several threads at once.
class Http1Client {
 public:
  explicit Http1Client(Http1Options options);
  ~Http1Client();
  Http1Client(const Http1Client&) = delete;
  Http1Client& operator=(const Http1Client&) = delete;

  /// Whether `req` can run here (see the class comment), and OpenSSL (libssl.so.3)
  /// could be loaded. False on the loop thread itself (a callback's own request).
  bool can_run(const Request& req) const;

  /// Runs `req` and returns when it has ended. Its callbacks are called on the loop
  /// thread (so they should not block for long).
  Response perform(const Request& req);

  /// Runs all `reqs` concurrently (at most max_host_connections at a time per server)
  /// and returns their responses in order.
  std::vector<Response> perform_all(const std::vector<const Request*>& reqs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktrain::net
