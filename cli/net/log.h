#pragma once
// -v: one line per request on the error stream, credentials redacted.

#include <iosfwd>
#include <mutex>
#include <string>

#include "base/env.h"
#include "net/http.h"

namespace ktrain::net {

/// Wraps a transport and logs each request: "GET https://host/path 200 OK 12ms (HTTP/2)".
/// URLs go through redact_url (or Request::log_label replaces them). At verbosity 2 and
/// more, request headers are logged too, with Authorization, Proxy-Authorization and
/// Cookie values replaced by "REDACTED". Bodies are never logged.
class LoggingTransport : public HttpTransport {
 public:
  /// `inner`, `log` and `clock` must outlive this.
  LoggingTransport(HttpTransport& inner, std::ostream& log, Clock& clock, int verbosity = 1);

  Response perform(const Request& req) override;
  std::vector<Response> perform_all(const std::vector<Request>& reqs) override;
  /// Logs the request when it has ended, as perform does.
  void start(Request req, std::function<void(Response)> done) override;

 private:
  /// What a started request's line needs of it.
  struct Shown {
    std::string method;
    std::string url;
    std::string log_label;
    Headers headers;  ///< at verbosity 2 and more
  };
  /// Logs `req` (a Request or a Shown).
  template <typename R>
  void log_one(const R& req, const Response& resp, std::chrono::milliseconds took);

  HttpTransport& inner_;
  std::ostream& log_;
  Clock& clock_;
  int verbosity_;
  std::mutex mutex_;
};

/// Whether a header's value is a credential that logs must not show.
bool is_secret_header(std::string_view name);

}  // namespace ktrain::net
