#include "net/http.h"

#include <algorithm>
#include <cctype>
#include <thread>

namespace ktrain::net {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {

/// "host:port" (or "host") of a URL, for messages.
std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of("/?#", start);
  std::string authority =
      url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  auto at = authority.rfind('@');
  if (at != std::string::npos) authority = authority.substr(at + 1);
  return authority;
}

bool is_secret_param(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* const kWords[] = {"token",      "password", "passwd", "secret", "signature",
                                       "credential", "sig",      "key",    "auth",   "session"};
  return std::any_of(std::begin(kWords), std::end(kWords),
                     [&](const char* w) { return n.find(w) != std::string::npos; });
}

}  // namespace

std::optional<std::string> Response::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return std::nullopt;
}

bool is_idempotent(const Request& req) {
  if (req.idempotent) return *req.idempotent;
  static const char* const kSafe[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"};
  return std::any_of(std::begin(kSafe), std::end(kSafe),
                     [&](const char* m) { return iequals(req.method, m); });
}

std::string describe_failure(const Response& resp, const std::string& url) {
  const std::string host = host_of(url);
  const std::string detail = resp.failure_message.empty() ? "" : " (" + resp.failure_message + ")";
  switch (resp.failure) {
    case TransportFailure::kNone:
      return "";
    case TransportFailure::kResolve:
      return "cannot resolve the host name of " + host + ": check the address" + detail;
    case TransportFailure::kConnect:
      return "cannot connect to " + host +
             ": connection refused or unreachable (is the server running?)" + detail;
    case TransportFailure::kTls:
      return "TLS with " + host +
             " failed: the server's certificate could not be verified, or the handshake failed "
             "(check the CA, the server name and the client certificate)" +
             detail;
    case TransportFailure::kTimeout:
      return "timed out talking to " + host + detail;
    case TransportFailure::kDropped:
      return "the connection to " + host + " closed before the response was complete" + detail;
    case TransportFailure::kAborted:
      return "the transfer from " + host + " was stopped" + detail;
    case TransportFailure::kTooLarge:
      return "the answer from " + host + " is too large to read whole" + detail;
    case TransportFailure::kNotSent:
      return "the request to " + host + " was not sent" + detail;
    case TransportFailure::kRedirect:
      return host + " " + resp.failure_message + ", which ktrain does not follow";
    case TransportFailure::kOther:
      break;
  }
  return "request to " + host + " failed" + detail;
}

void throw_if_failed(const Response& resp, const std::string& url) {
  if (resp.failure == TransportFailure::kNone) return;
  throw TransportError(describe_failure(resp, url), resp.failure);
}

namespace {

bool has_line_break_or_nul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

}  // namespace

std::string request_problem(const Request& req) {
  if (has_line_break_or_nul(req.method) || req.method.find(' ') != std::string::npos) {
    return "the method holds a space, a line break (CR or LF) or NUL";
  }
  if (has_line_break_or_nul(req.url)) return "the URL holds a line break (CR or LF) or NUL";
  for (const auto& [name, value] : req.headers) {
    if (name.empty() || has_line_break_or_nul(name) ||
        name.find_first_of(": \t") != std::string::npos) {
      return "a header name is empty or holds a colon, a space, a line break (CR or LF) or NUL";
    }
    if (has_line_break_or_nul(value)) {
      return "the value of the " + name + " header holds a line break (CR or LF) or NUL";
    }
  }
  return "";
}

Response not_sent(const std::string& why) {
  Response r;
  r.failure = TransportFailure::kNotSent;
  r.failure_message = why;
  return r;
}

bool append_capped(std::string& s, std::string_view data, std::size_t max) {
  const std::size_t room = s.size() < max ? max - s.size() : 0;
  const bool fits = data.size() <= room;
  const std::size_t n = fits ? data.size() : room;
  if (s.capacity() < s.size() + n) {
    // Powers of two up to `max`: the last growth before a cap of 256 MiB copies 128 MiB
    // into 256 (384 MiB at once), never 255 into 256, whatever the chunks' sizes were.
    const std::size_t want = std::max(s.size() + n, 2 * s.capacity());
    std::size_t grown = 4096;
    while (grown < want && grown < max) grown *= 2;
    s.reserve(std::max(s.size() + n, std::min(max, grown)));
  }
  s.append(data.substr(0, n));
  return fits;
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string redact_url(const std::string& url) {
  std::string out = url;
  // user:password@host
  auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    auto start = scheme + 3;
    auto end = out.find_first_of("/?#", start);
    auto at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
    if (at != std::string::npos && at >= start) out.replace(start, at - start, "REDACTED");
  }
  auto q = out.find('?');
  if (q == std::string::npos) return out;
  std::string result = out.substr(0, q + 1);
  std::string query = out.substr(q + 1);
  std::string fragment;
  if (auto h = query.find('#'); h != std::string::npos) {
    fragment = query.substr(h);
    query.resize(h);
  }
  std::size_t pos = 0;
  bool first = true;
  while (pos <= query.size()) {
    auto amp = query.find('&', pos);
    std::string part = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!first) result += '&';
    first = false;
    auto eq = part.find('=');
    if (eq != std::string::npos && is_secret_param(std::string_view(part).substr(0, eq))) {
      result += part.substr(0, eq + 1) + "REDACTED";
    } else {
      result += part;
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return result + fragment;
}

void HttpTransport::start(Request req, std::function<void(Response)> done) {
  std::thread([this, req = std::move(req), done = std::move(done)]() mutable {
    done(perform(req));
  }).detach();
}

}  // namespace ktrain::net
