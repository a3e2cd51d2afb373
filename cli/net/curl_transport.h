#pragma once
// The real HttpTransport, on libcurl.

#include <memory>

#include "net/http.h"

namespace ktrain::net {

/// Options of the whole transport (per-request settings live in Request).
struct CurlOptions {
  /// Most connections kept open per host (HTTP/1.1 parallelism in perform_all; over
  /// HTTP/2 one connection carries them all). Eight keep a server busy: on a 2-core
  /// machine, 3000 applies to the test API server took 10-15% longer over 16 (more
  /// handshakes, more server threads) and longer still over 32.
  long max_host_connections = 8;
  /// Most transfers in flight at once in one perform_all.
  std::size_t max_in_flight = 256;
  /// User-Agent header.
  std::string user_agent = "ktrain/" KTRAIN_VERSION;
};

/// HttpTransport on libcurl:
/// - connections, TLS sessions and DNS answers are shared by every request (a curl
///   share handle), so sequential requests reuse connections; easy handles are pooled;
/// - HTTP/2 over TLS when the server offers it through ALPN, and perform_all runs the
///   requests on one curl multi handle with multiplexing (several streams on one
///   connection), else parallel HTTP/1.1 connections;
/// - TLS from TlsConfig: CA file or PEM data, client certificate and key as PEM data,
///   insecure mode, and tls-server-name: libcurl has no option for it, so the URL's
///   host is replaced by the server name (which curl then sends as SNI and verifies
///   the certificate against) while CURLOPT_CONNECT_TO sends the connection to the
///   original host and port, and the Host header keeps the original authority;
/// - single requests from every thread (perform, and perform_all of one request) run
///   on one multi handle driven by one thread of the transport's own, so hundreds of
///   followed logs and watches cost one set of tables and share connections; the
///   calling thread waits while that thread calls the request's callbacks (which
///   therefore should not block for long); start() hands a request to that thread
///   and returns, with no thread waiting for it (followed logs);
/// - failures below HTTP come back classified (TransportFailure).
/// Safe to call from several threads at once.
class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(CurlOptions options = {});
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Response perform(const Request& req) override;
  std::vector<Response> perform_all(const std::vector<Request>& reqs) override;
  /// On the loop thread that runs single requests: no thread of its own waits for it.
  void start(Request req, std::function<void(Response)> done) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktrain::net
