#pragma once
// The HTTP transport seam. Everything that talks to a server (the Kubernetes API
// server, an OCI registry) goes through HttpTransport, so unit tests use scripted
// fakes and only net/curl_transport.cc touches libcurl. Auth, retries and rate
// limits wrap a transport (decorators); they are not scattered through callers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace ktrain::net {

/// TLS settings of one request (from a kubeconfig cluster/user or registry settings).
struct TlsConfig {
  std::string ca_file;  ///< PEM bundle to trust ("" = system trust store)
  std::string ca_pem;   ///< PEM data to trust (kubeconfig *-data), alternative to ca_file
  bool insecure_skip_verify =
      false;                    ///< never verify the server (kubeconfig insecure-skip-tls-verify)
  std::string server_name;      ///< name to verify instead of the URL's host (tls-server-name)
  std::string client_cert_pem;  ///< client certificate (PEM data)
  std::string client_key_pem;   ///< its private key (PEM data)
};

using Headers = std::vector<std::pair<std::string, std::string>>;

/// The most bytes of an answer's body that a request keeps by default (256 MiB). An
/// answer read whole is a page of a list, an object, a manifest, a token or a log
/// without --follow: none comes near it, and an answer past it (a server gone wrong,
/// or a hostile one) fails at that point instead of taking the machine's memory.
/// Streamed answers (Request::on_data) have no such limit here: their readers bound
/// what they keep.
inline constexpr std::size_t kMaxBodyBytes = std::size_t{256} << 20;

/// One HTTP request.
struct Request {
  std::string method = "GET";
  std::string url;
  Headers headers;
  std::string body;
  /// When set, the body is streamed from here instead of `body` (large uploads):
  /// called with the offset into the body and a buffer, returns the number of bytes
  /// copied (0 = end). Reading by offset lets a retry start again from byte 0.
  std::function<std::size_t(std::uint64_t offset, char* buf, std::size_t len)> body_reader;
  /// The length of what body_reader yields (-1 = unknown: sent chunked).
  std::int64_t body_length = -1;
  /// Whether the request may be repeated safely. Unset: by method (GET HEAD PUT
  /// DELETE OPTIONS are, POST and PATCH are not). Set it for a POST or PATCH that is
  /// known to be harmless to repeat (server-side apply, opening a blob upload).
  std::optional<bool> idempotent;
  /// Follow 3xx redirects (registries redirect blob downloads to storage). Credentials
  /// set in `headers` are not sent to another host.
  bool follow_redirects = false;
  TlsConfig tls;
  std::string
      proxy;  ///< proxy URL ("" = none; the usual *_proxy variables are not used implicitly)
  std::chrono::milliseconds connect_timeout{10'000};
  /// Whole-request limit; 0 = none (watches and followed logs run for as long as they run).
  std::chrono::milliseconds timeout{0};
  /// Abort when no byte arrives for this long; 0 = never.
  std::chrono::milliseconds read_timeout{0};
  /// When set, response body bytes are handed here as they arrive (and not kept in
  /// Response::body). Return false to stop the transfer.
  std::function<bool(std::string_view)> on_data;
  /// Without on_data: the most bytes of the body kept in Response::body. A longer
  /// answer (by its Content-Length, or as it arrives) fails with
  /// TransportFailure::kTooLarge, keeping none of it.
  std::size_t max_body_bytes = kMaxBodyBytes;
  /// When set, called once with the status and headers before any on_data call.
  std::function<void(int status, const Headers& headers)> on_headers;
  /// Text for logs (-v) instead of the URL, when the URL itself carries a secret.
  std::string log_label;
  /// When set, polled while the request is in flight (at least every 100 ms); true
  /// ends it with TransportFailure::kAborted. For streams that wait a long time for
  /// data (followed logs, watches) and must stop on a deadline or Ctrl-C.
  std::function<bool()> cancelled;
  /// A long-lived stream that waits for data most of its life (a followed log, a
  /// watch): it keeps small send buffers, and its TLS buffers are released while it
  /// idles, so that hundreds of them stay cheap.
  bool lean = false;
};

/// What kind of failure happened below HTTP.
enum class TransportFailure {
  kNone,
  kResolve,   ///< the host name did not resolve
  kConnect,   ///< connection refused or unreachable
  kTls,       ///< TLS handshake or certificate verification failed
  kTimeout,   ///< connect, read or whole-request timeout
  kDropped,   ///< the connection closed before the response was complete
  kAborted,   ///< on_data returned false
  kTooLarge,  ///< the answer's body is longer than Request::max_body_bytes
  kNotSent,   ///< the request cannot be sent as it is (a header with CR, LF or NUL)
  kRedirect,  ///< a redirect to a scheme not followed (HTTPS to HTTP, file:, ...)
  kOther,
};

/// One HTTP response (or a transport failure, when status == 0 and failure != kNone).
struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  std::string http_version;  ///< "1.1", "2"
  TransportFailure failure = TransportFailure::kNone;
  std::string failure_message;  ///< libcurl's words, for messages

  /// The first header named `name` (case-insensitive), if any.
  std::optional<std::string> header(std::string_view name) const;
  bool ok() const { return failure == TransportFailure::kNone && status >= 200 && status < 300; }
};

/// Whether `a` and `b` are equal ignoring ASCII case (header names, methods).
bool iequals(std::string_view a, std::string_view b);

/// Whether `req` may be sent again after a failure (see Request::idempotent).
bool is_idempotent(const Request& req);

/// A plain-language sentence for a failure below HTTP, naming the host of `url`:
/// "cannot connect to 127.0.0.1:5000: connection refused (is the server running?)".
std::string describe_failure(const Response& resp, const std::string& url);

/// Throws TransportError(describe_failure(...)) when `resp` failed below HTTP.
void throw_if_failed(const Response& resp, const std::string& url);

/// Why `req` cannot be sent, or "" when it can: a header name or value, the method or
/// the URL holds CR, LF or NUL (which would end a header line and start another: a
/// header of the sender's choosing, or a request), or a header name is empty or holds
/// a colon or a space. Names the header, never its value. Transports answer such a
/// request with TransportFailure::kNotSent and this text, without sending it.
std::string request_problem(const Request& req);

/// A Response for a request that was not sent, and why (TransportFailure::kNotSent).
Response not_sent(const std::string& why);

/// Appends `data` to `s` unless `s` would grow past `max` bytes; then appends what
/// fits and returns false. Grows `s`'s buffer no further than `max`.
bool append_capped(std::string& s, std::string_view data, std::size_t max);

/// "256 MiB", "64 KiB" or "1000 bytes": a size for messages.
std::string size_text(std::size_t bytes);

/// `url` with secrets removed, for logs and messages: user:password@ and query
/// parameters that carry credentials (token, access_token, signature, ...) become
/// "REDACTED".
std::string redact_url(const std::string& url);

/// The standard reason phrase of an HTTP status ("Too Many Requests"), "" when unknown.
const char* reason_phrase(int status);

/// A failure below HTTP, as an Error with exit status 3 (cannot reach the server), or
/// 1 for an answer too large to read (the server answered, wrongly).
class TransportError : public Error {
 public:
  TransportError(const std::string& message, TransportFailure failure)
      : Error(message,
              failure == TransportFailure::kTooLarge || failure == TransportFailure::kRedirect
                  ? exit_code::kFailed  // the server answered, wrongly
                  : exit_code::kUnreachable),
        failure_(failure) {}
  TransportFailure failure() const { return failure_; }

 private:
  TransportFailure failure_;
};

/// Sends HTTP requests. Abstract so it can be faked; the real one is CurlTransport
/// (net/curl_transport.h). Implementations are safe to call from several threads.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  /// Performs `req` and waits for the whole response. A failure below HTTP comes back
  /// as a Response with `failure` set (it does not throw), so callers decide on retries.
  virtual Response perform(const Request& req) = 0;
  /// Performs all `reqs` concurrently (HTTP/2 multiplexing where the server offers it,
  /// else parallel connections) and waits for all; responses in the order of `reqs`.
  virtual std::vector<Response> perform_all(const std::vector<Request>& reqs) = 0;
  /// Starts `req` and returns without waiting for it: `done` gets the response (as
  /// perform would return it) once the request has ended. For long streams (followed
  /// logs) that would otherwise hold a waiting thread each. `done` and the request's
  /// callbacks run on a thread of the transport's, and must not block; `done` may be
  /// called before start returns. Not retried by RetryingTransport: its callers retry
  /// themselves. The default runs perform() on a thread of its own.
  virtual void start(Request req, std::function<void(Response)> done);
};

}  // namespace ktrain::net
