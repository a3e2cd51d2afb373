#include "net/log.h"

#include <algorithm>
#include <cctype>
#include <ostream>

#include "base/text.h"

namespace ktrain::net {

namespace {

const char* reason_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 416:
      return "Range Not Satisfiable";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

}  // namespace

bool is_secret_header(std::string_view name) {
  const std::string n = ascii_lower(name);
  return n == "authorization" || n == "proxy-authorization" || n == "cookie" || n == "set-cookie" ||
         n == "x-registry-auth" || n.find("token") != std::string::npos;
}

LoggingTransport::LoggingTransport(HttpTransport& inner, std::ostream& log, Clock& clock,
                                   int verbosity)
    : inner_(inner), log_(log), clock_(clock), verbosity_(verbosity) {}

template <typename R>
void LoggingTransport::log_one(const R& req, const Response& resp, std::chrono::milliseconds took) {
  std::string line =
      req.method + " " + (req.log_label.empty() ? redact_url(req.url) : req.log_label);
  if (resp.failure != TransportFailure::kNone && resp.status == 0) {
    line += " failed: " + describe_failure(resp, req.url);
  } else {
    line += " " + std::to_string(resp.status);
    if (const char* r = reason_phrase(resp.status); *r) line += std::string(" ") + r;
    if (resp.failure != TransportFailure::kNone)
      line += " (then " + describe_failure(resp, req.url) + ")";
  }
  line += " " + std::to_string(took.count()) + "ms";
  if (!resp.http_version.empty()) line += " (HTTP/" + resp.http_version + ")";
  std::lock_guard<std::mutex> g(mutex_);
  log_ << "I " << line << "\n";
  if (verbosity_ >= 2) {
    for (const auto& [k, v] : req.headers) {
      log_ << "I   > " << k << ": " << (is_secret_header(k) ? "REDACTED" : v) << "\n";
    }
    for (const auto& [k, v] : resp.headers) {
      log_ << "I   < " << k << ": " << (is_secret_header(k) ? "REDACTED" : v) << "\n";
    }
  }
  log_.flush();
}

Response LoggingTransport::perform(const Request& req) {
  auto start = clock_.steady_now();
  Response resp = inner_.perform(req);
  log_one(req, resp,
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - start));
  return resp;
}

void LoggingTransport::start(Request req, std::function<void(Response)> done) {
  // What the line needs of the request, not the whole request (its callbacks and TLS
  // material) for as long as the stream runs.
  Shown shown{req.method, req.url, req.log_label, verbosity_ >= 2 ? req.headers : Headers()};
  const auto begun = clock_.steady_now();
  inner_.start(std::move(req), [this, shown = std::move(shown), begun,
                                done = std::move(done)](Response resp) {
    log_one(shown, resp,
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - begun));
    done(std::move(resp));
  });
}

std::vector<Response> LoggingTransport::perform_all(const std::vector<Request>& reqs) {
  auto start = clock_.steady_now();
  std::vector<Response> out = inner_.perform_all(reqs);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - start);
  for (size_t i = 0; i < reqs.size(); ++i) log_one(reqs[i], out[i], took);
  return out;
}

const char* reason_phrase(int status) {
  return reason_text(status);
}

}  // namespace ktrain::net
