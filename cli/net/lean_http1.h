#pragma once
// Long-lived HTTP/1.1 streams (followed logs, watches) on OpenSSL, without libcurl.
//
// Following every rank of a large run keeps hundreds of such streams open at once,
// and against a server that answers over HTTP/1.x each needs a connection of its own.
// Through libcurl each costs some 35 KiB besides its TLS state: an easy handle, and
// a TLS context of its own into which the CA bundle is loaded again. Here every stream
// to a server shares one TLS context, and a connection holds only its TLS state and a
// few hundred bytes of parsing state; they all run on one thread of their own.

#include <memory>
#include <string>

#include "net/http.h"

namespace ktrain::net {

/// Runs lean requests (Request::lean) over HTTP/1.1 on plain sockets and OpenSSL,
/// from one loop thread. Only what such streams need: GET without a body, no proxy,
/// no redirects; response bodies framed by chunked encoding, Content-Length or the end
/// of the connection; each request on a connection of its own. TLS as CurlTransport
/// does it: the CA file or PEM data (else the system's trust store), the server's
/// name checked (tls-server-name instead of the URL's host when set), a client
/// certificate, or no verification when insecure. Failures come back classified.
/// Safe to call from several threads at once.
class LeanHttp1 {
 public:
  explicit LeanHttp1(std::string user_agent);
  ~LeanHttp1();
  LeanHttp1(const LeanHttp1&) = delete;
  LeanHttp1& operator=(const LeanHttp1&) = delete;

  /// Whether `req` can go this way: a GET with no body, proxy or redirects to an http
  /// or https URL, and OpenSSL (libssl.so.3) could be loaded.
  bool can_run(const Request& req) const;

  /// Runs `req` and returns when it has ended. Its callbacks are called on the loop
  /// thread (so they should not block for long).
  Response perform(const Request& req);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktrain::net
