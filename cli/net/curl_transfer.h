#pragma once
// One request in flight on libcurl: its state, the callbacks that fill its response
// (headers, body, capped; an upload read from its reader), and the URL parts that its
// connection is known by.

#include <curl/curl.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "net/http.h"

namespace ktrain::net::curl {

/// Splits a URL into scheme, authority (host[:port]) and the rest.
struct UrlParts {
  std::string scheme, host, port, rest;
};
UrlParts split_url(const std::string& url);

/// "scheme://host:port" of a URL.
std::string origin_of(const std::string& url);

/// Whether `h` has a header `name` (any case).
bool has_header(const Headers& h, std::string_view name);

/// One request in flight.
struct Transfer {
  const Request* req = nullptr;
  Response resp;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  curl_slist* connect_to = nullptr;
  std::string url;
  std::uint64_t read_offset = 0;
  bool headers_delivered = false;
  bool aborted = false;
  bool too_large = false;         ///< the body passed Request::max_body_bytes
  bool short_body = false;        ///< body_reader ended before body_length
  bool refused_redirect = false;  ///< a redirect to a scheme not allowed (set_protocols)
  bool in_flight = false;
  bool done = false;  ///< finished (lean streams: set by the loop thread, under its mutex)
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  /// Started with CurlTransport::start: the request it owns, and who gets the answer
  /// (the loop deletes the transfer after calling it).
  std::unique_ptr<Request> owned;
  std::function<void(Response)> on_done;

  void deliver_headers() {
    if (headers_delivered) return;
    headers_delivered = true;
    if (req->on_headers) req->on_headers(resp.status, resp.headers);
  }
};

/// CURLOPT_HEADERFUNCTION: a response header line into the Transfer's response.
size_t on_header_line(char* data, size_t size, size_t n, void* user);
/// CURLOPT_WRITEFUNCTION: body bytes to the request's on_data, else into the response
/// body up to the request's max_body_bytes.
size_t on_body(char* data, size_t size, size_t n, void* user);
/// CURLOPT_READFUNCTION: the upload body from the request's body_reader.
size_t on_read(char* buf, size_t size, size_t n, void* user);
/// CURLOPT_SEEKFUNCTION: an upload restarted (a redirect, an authentication).
int on_seek(void* user, curl_off_t offset, int origin);

/// CURLOPT_SSL_CTX_FUNCTION of lean streams: OpenSSL frees a connection's read and
/// write buffers (some 34 KiB) whenever they are empty, rather than keeping them.
CURLcode release_tls_buffers(CURL*, void* ssl_ctx, void*);

}  // namespace ktrain::net::curl
