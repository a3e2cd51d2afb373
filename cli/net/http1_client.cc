#include "net/http1_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
// Types and constants only: the functions are bound with dlopen (see SslLib).
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/dynlib.h"

namespace ktrain::net {

namespace {

using SteadyClock = std::chrono::steady_clock;

/// Set on the loop thread.
thread_local bool t_on_loop = false;

/// The OpenSSL functions used here, from libssl.so.3 (and libcrypto through it): the
/// same library libcurl runs on, loaded when the first Http1Client is made.
struct SslLib {
  const SSL_METHOD* (*client_method)() = nullptr;
  SSL_CTX* (*ctx_new)(const SSL_METHOD*) = nullptr;
  void (*ctx_free)(SSL_CTX*) = nullptr;
  long (*ctx_ctrl)(SSL_CTX*, int, long, void*) = nullptr;
  std::uint64_t (*ctx_set_options)(SSL_CTX*, std::uint64_t) = nullptr;
  void (*ctx_set_verify)(SSL_CTX*, int, SSL_verify_cb) = nullptr;
  int (*ctx_load_verify_locations)(SSL_CTX*, const char*, const char*) = nullptr;
  int (*ctx_set_default_verify_paths)(SSL_CTX*) = nullptr;
  X509_STORE* (*ctx_get_cert_store)(const SSL_CTX*) = nullptr;
  int (*ctx_use_certificate)(SSL_CTX*, X509*) = nullptr;
  int (*ctx_use_private_key)(SSL_CTX*, EVP_PKEY*) = nullptr;
  int (*ctx_set_alpn_protos)(SSL_CTX*, const unsigned char*, unsigned int) = nullptr;
  int (*store_add_cert)(X509_STORE*, X509*) = nullptr;
  BIO* (*bio_new_mem_buf)(const void*, int) = nullptr;
  int (*bio_free)(BIO*) = nullptr;
  X509* (*pem_read_x509)(BIO*, X509**, pem_password_cb*, void*) = nullptr;
  EVP_PKEY* (*pem_read_private_key)(BIO*, EVP_PKEY**, pem_password_cb*, void*) = nullptr;
  void (*x509_free)(X509*) = nullptr;
  void (*pkey_free)(EVP_PKEY*) = nullptr;
  SSL* (*ssl_new)(SSL_CTX*) = nullptr;
  void (*ssl_free)(SSL*) = nullptr;
  int (*ssl_set_fd)(SSL*, int) = nullptr;
  long (*ssl_ctrl)(SSL*, int, long, void*) = nullptr;
  int (*ssl_set1_host)(SSL*, const char*) = nullptr;
  X509_VERIFY_PARAM* (*ssl_get0_param)(SSL*) = nullptr;
  int (*param_set1_ip_asc)(X509_VERIFY_PARAM*, const char*) = nullptr;
  int (*ssl_connect)(SSL*) = nullptr;
  int (*ssl_read)(SSL*, void*, int) = nullptr;
  int (*ssl_write)(SSL*, const void*, int) = nullptr;
  int (*ssl_get_error)(const SSL*, int) = nullptr;
  long (*ssl_get_verify_result)(const SSL*) = nullptr;
  const char* (*verify_error_string)(long) = nullptr;
  unsigned long (*err_get_error)() = nullptr;
  void (*err_error_string_n)(unsigned long, char*, size_t) = nullptr;
  void (*err_clear_error)() = nullptr;
};

/// OpenSSL, or nullptr when it cannot be loaded (requests then go through libcurl).
const SslLib* ssl_lib() {
  static SslLib l;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    DynamicLibrary dl("libssl.so.3");
    dl.bind(l.client_method, "TLS_client_method");
    dl.bind(l.ctx_new, "SSL_CTX_new");
    dl.bind(l.ctx_free, "SSL_CTX_free");
    dl.bind(l.ctx_ctrl, "SSL_CTX_ctrl");
    dl.bind(l.ctx_set_options, "SSL_CTX_set_options");
    dl.bind(l.ctx_set_verify, "SSL_CTX_set_verify");
    dl.bind(l.ctx_load_verify_locations, "SSL_CTX_load_verify_locations");
    dl.bind(l.ctx_set_default_verify_paths, "SSL_CTX_set_default_verify_paths");
    dl.bind(l.ctx_get_cert_store, "SSL_CTX_get_cert_store");
    dl.bind(l.ctx_use_certificate, "SSL_CTX_use_certificate");
    dl.bind(l.ctx_use_private_key, "SSL_CTX_use_PrivateKey");
    dl.bind(l.ctx_set_alpn_protos, "SSL_CTX_set_alpn_protos");
    dl.bind(l.store_add_cert, "X509_STORE_add_cert");
    dl.bind(l.bio_new_mem_buf, "BIO_new_mem_buf");
    dl.bind(l.bio_free, "BIO_free");
    dl.bind(l.pem_read_x509, "PEM_read_bio_X509");
    dl.bind(l.pem_read_private_key, "PEM_read_bio_PrivateKey");
    dl.bind(l.x509_free, "X509_free");
    dl.bind(l.pkey_free, "EVP_PKEY_free");
    dl.bind(l.ssl_new, "SSL_new");
    dl.bind(l.ssl_free, "SSL_free");
    dl.bind(l.ssl_set_fd, "SSL_set_fd");
    dl.bind(l.ssl_ctrl, "SSL_ctrl");
    dl.bind(l.ssl_set1_host, "SSL_set1_host");
    dl.bind(l.ssl_get0_param, "SSL_get0_param");
    dl.bind(l.param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
    dl.bind(l.ssl_connect, "SSL_connect");
    dl.bind(l.ssl_read, "SSL_read");
    dl.bind(l.ssl_write, "SSL_write");
    dl.bind(l.ssl_get_error, "SSL_get_error");
    dl.bind(l.ssl_get_verify_result, "SSL_get_verify_result");
    dl.bind(l.verify_error_string, "X509_verify_cert_error_string");
    dl.bind(l.err_get_error, "ERR_get_error");
    dl.bind(l.err_error_string_n, "ERR_error_string_n");
    dl.bind(l.err_clear_error, "ERR_clear_error");
    ok = dl.ok();
  });
  return ok ? &l : nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

/// Where a request goes: "scheme://host[:port]/path?query".
struct Target {
  bool tls = false;
  std::string host;       ///< without the brackets of an IPv6 address
  std::string port;       ///< explicit or the scheme's
  std::string authority;  ///< as the URL has it, for the Host header
  std::string target;     ///< path and query
};

std::optional<Target> parse_target(const std::string& url) {
  Target t;
  size_t start = 0;
  if (url.compare(0, 8, "https://") == 0) {
    t.tls = true;
    start = 8;
  } else if (url.compare(0, 7, "http://") == 0) {
    start = 7;
  } else {
    return std::nullopt;
  }
  const size_t end = url.find_first_of("/?#", start);
  t.authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (t.authority.empty() || t.authority.find('@') != std::string::npos) return std::nullopt;
  std::string rest = end == std::string::npos ? "" : url.substr(end);
  if (auto hash = rest.find('#'); hash != std::string::npos) rest.erase(hash);
  t.target = rest.empty() || rest[0] != '/' ? "/" + rest : rest;
  const std::string& a = t.authority;
  if (a[0] == '[') {
    const size_t close = a.find(']');
    if (close == std::string::npos) return std::nullopt;
    t.host = a.substr(1, close - 1);
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return std::nullopt;
      t.port = a.substr(close + 2);
    }
  } else if (auto colon = a.rfind(':'); colon != std::string::npos) {
    t.host = a.substr(0, colon);
    t.port = a.substr(colon + 1);
  } else {
    t.host = a;
  }
  if (t.port.empty()) t.port = t.tls ? "443" : "80";
  if (t.port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return t;
}

bool is_ip_literal(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

/// OpenSSL's newest error in words (and its queue cleared).
std::string ssl_error_text(const SslLib& ssl) {
  std::string out;
  while (unsigned long e = ssl.err_get_error()) {
    char buf[256];
    ssl.err_error_string_n(e, buf, sizeof buf);
    out = buf;
  }
  return out;
}

using Addresses = std::vector<std::pair<sockaddr_storage, socklen_t>>;

/// Waits for the exchanges of one perform or perform_all (under the loop's mutex).
struct Waiter {
  size_t left = 0;
};

struct Link;

/// One request and its answer.
struct Exchange {
  enum class Phase { kWaiting, kSend, kHead, kBody, kDone };
  enum class Framing { kUntilClose, kLength, kChunked, kNone };
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };

  const Request* req = nullptr;
  Response resp;
  Target target;
  std::string key;  ///< the pool it belongs to: the server and the TLS settings
  Addresses addrs;
  Phase phase = Phase::kWaiting;
  std::string out;   ///< the request
  size_t sent = 0;   ///< bytes of it sent
  std::string head;  ///< the answer's head, until its blank line
  Framing framing = Framing::kUntilClose;
  Chunk chunk = Chunk::kSize;
  std::uint64_t left = 0;  ///< bytes left of the Content-Length or of the current chunk
  std::string line;        ///< a chunk-size or trailer line being read
  bool keep_alive = true;  ///< the answer lets its connection serve another request
  bool got_bytes = false;  ///< a byte of the answer has arrived
  int resends = 0;
  SteadyClock::time_point started, last_byte;
  Link* link = nullptr;
  Waiter* waiter = nullptr;
};

/// One connection.
struct Link {
  enum class State { kConnect, kHandshake, kReady };
  std::string key;
  bool lean = false;       ///< a lean stream's own connection: closed when the stream ends
  SSL_CTX* ctx = nullptr;  ///< nullptr: plain HTTP
  std::string name;        ///< the name TLS checks the certificate against
  bool verify = true;
  Addresses addrs;
  size_t next_addr = 0;
  int last_errno = 0;
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::kConnect;
  short events = POLLOUT;
  Exchange* ex = nullptr;  ///< the exchange it serves (or connects for)
  bool reused = false;     ///< it has served an exchange before
  bool closed = false;
};

}  // namespace

struct Http1Client::Impl {
  Http1Options options;
  const SslLib* ssl = nullptr;

  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<Exchange*> incoming;
  bool quit = false;
  int wake_fd = -1;
  std::once_flag start_once;
  std::thread thread;

  // The loop thread's own.
  std::vector<Exchange*> live;                          ///< every exchange not finished yet
  std::map<std::string, std::deque<Exchange*>> queues;  ///< waiting for a connection
  std::vector<std::unique_ptr<Link>> links;
  std::map<std::string, size_t> pooled_links;  ///< open connections per pool, lean ones aside
  /// One TLS context per TLS setting: every connection to a server shares its trust
  /// store and client certificate.
  std::map<std::string, SSL_CTX*> contexts;
  SteadyClock::time_point last_trim{}, last_check{};
  /// Where the loop reads into (one for all connections; not thread_local, which every
  /// thread of the process would have a copy of).
  std::array<char, 16384> buf{};

  /// Addresses of the hosts resolved lately (as libcurl keeps them, for a minute), so
  /// that hundreds of requests starting together resolve once.
  std::mutex dns_mu;
  std::map<std::string, std::pair<SteadyClock::time_point, Addresses>> dns;

  ~Impl() {
    if (thread.joinable()) {
      {
        std::lock_guard<std::mutex> lk(mu);
        quit = true;
      }
      wake();
      thread.join();
    }
    if (wake_fd >= 0) ::close(wake_fd);
    for (auto& [key, ctx] : contexts) ssl->ctx_free(ctx);
  }

  void wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }

  /// The addresses of `t` (resolved on the caller's thread: the loop never waits for
  /// a name server); false when the name does not resolve.
  bool resolve(const Target& t, Addresses& out) {
    const std::string key = t.host + " " + t.port;
    const auto now = SteadyClock::now();
    {
      std::lock_guard<std::mutex> lk(dns_mu);
      auto it = dns.find(key);
      if (it != dns.end() && now - it->second.first < std::chrono::seconds(60)) {
        out = it->second.second;
        return true;
      }
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (is_ip_literal(t.host) ? AI_NUMERICHOST : AI_ADDRCONFIG);
    addrinfo* found = nullptr;
    if (::getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &found) != 0 || !found) return false;
    out.clear();
    for (addrinfo* a = found; a; a = a->ai_next) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      out.emplace_back(s, a->ai_addrlen);
    }
    ::freeaddrinfo(found);
    std::lock_guard<std::mutex> lk(dns_mu);
    dns[key] = {now, out};
    return true;
  }

  /// Readies `x` for `req` on the caller's thread; false (and x.resp says why) when
  /// it cannot be sent.
  bool prepare(Exchange& x, const Request& req) {
    x.req = &req;
    if (std::string why = request_problem(req); !why.empty()) {
      x.resp = not_sent(why);  // a line break in a header would start another
      return false;
    }
    auto target = parse_target(req.url);
    if (!target || !ssl) {
      x.resp.failure = TransportFailure::kOther;
      x.resp.failure_message = "not a request this HTTP/1.1 client runs";
      return false;
    }
    x.target = std::move(*target);
    if (!resolve(x.target, x.addrs)) {
      x.resp.failure = TransportFailure::kResolve;
      x.resp.failure_message = "Could not resolve host: " + x.target.host;
      return false;
    }
    const TlsConfig& tls = req.tls;
    x.key = (x.target.tls ? "https://" : "http://") + x.target.authority;
    if (x.target.tls) {
      for (const std::string* part : {&tls.ca_file, &tls.ca_pem, &tls.client_cert_pem,
                                      &tls.client_key_pem, &tls.server_name}) {
        x.key += '\0';
        x.key += *part;
      }
      x.key += tls.insecure_skip_verify ? "\1" : "\0";
    }
    bool has_host = false, has_accept = false, has_agent = false;
    for (const auto& [k, v] : req.headers) {
      has_host = has_host || iequals(k, "Host");
      has_accept = has_accept || iequals(k, "Accept");
      has_agent = has_agent || iequals(k, "User-Agent");
    }
    std::string& o = x.out;
    o.reserve(256 + req.body.size());
    o += req.method;
    o += ' ';
    o += x.target.target;
    o += " HTTP/1.1\r\n";
    if (!has_host) o += "Host: " + x.target.authority + "\r\n";
    if (!has_agent) o += "User-Agent: " + options.user_agent + "\r\n";
    if (!has_accept) o += "Accept: */*\r\n";
    for (const auto& [k, v] : req.headers) {
      o += k;
      o += ": ";
      o += v;
      o += "\r\n";
    }
    const std::string& m = req.method;
    if (!req.body.empty() || m == "POST" || m == "PUT" || m == "PATCH") {
      o += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
    }
    o += "\r\n";
    o += req.body;
    return true;
  }

  /// The shared TLS context for `tls`; nullptr with `why` set when it cannot be made.
  SSL_CTX* context(const TlsConfig& tls, std::string& why) {
    std::string key = tls.ca_file;
    for (const std::string* part : {&tls.ca_pem, &tls.client_cert_pem, &tls.client_key_pem}) {
      key += '\0';
      key += *part;
    }
    key += tls.insecure_skip_verify ? "\1" : "\0";
    if (auto it = contexts.find(key); it != contexts.end()) return it->second;
    ssl->err_clear_error();
    SSL_CTX* ctx = ssl->ctx_new(ssl->client_method());
    if (!ctx) {
      why = "cannot make a TLS context: " + ssl_error_text(*ssl);
      return nullptr;
    }
    auto fail = [&](const std::string& what) {
      why = what;
      const std::string detail = ssl_error_text(*ssl);
      if (!detail.empty()) why += ": " + detail;
      ssl->ctx_free(ctx);
      return nullptr;
    };
    // Buffers are freed while a connection has nothing to read or send: hundreds of
    // streams that mostly wait do not each hold 34 KiB of them.
    ssl->ctx_ctrl(ctx, SSL_CTRL_MODE,
                  SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, nullptr);
    // A server that closes without a TLS close_notify ends an answer as libcurl takes
    // it; a body cut short is still told by its framing (chunks, length).
    ssl->ctx_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    static const unsigned char kAlpn[] = "\x08http/1.1";
    ssl->ctx_set_alpn_protos(ctx, kAlpn, sizeof kAlpn - 1);
    if (tls.insecure_skip_verify) {
      ssl->ctx_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    } else {
      ssl->ctx_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      if (!tls.ca_file.empty() &&
          ssl->ctx_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
        return fail("cannot read the CA file " + tls.ca_file);
      }
      if (!tls.ca_pem.empty()) {
        BIO* bio = ssl->bio_new_mem_buf(tls.ca_pem.data(), static_cast<int>(tls.ca_pem.size()));
        int added = 0;
        while (X509* cert = ssl->pem_read_x509(bio, nullptr, nullptr, nullptr)) {
          if (ssl->store_add_cert(ssl->ctx_get_cert_store(ctx), cert) == 1) ++added;
          ssl->x509_free(cert);
        }
        ssl->bio_free(bio);
        ssl->err_clear_error();  // the end of the data reads as an error
        if (added == 0) return fail("the CA data holds no PEM certificate");
      }
      if (tls.ca_file.empty() && tls.ca_pem.empty() &&
          ssl->ctx_set_default_verify_paths(ctx) != 1) {
        return fail("cannot load the system's trusted certificates");
      }
    }
    if (!tls.client_cert_pem.empty()) {
      BIO* bio = ssl->bio_new_mem_buf(tls.client_cert_pem.data(),
                                      static_cast<int>(tls.client_cert_pem.size()));
      bool ok = false;
      if (X509* leaf = ssl->pem_read_x509(bio, nullptr, nullptr, nullptr)) {
        ok = ssl->ctx_use_certificate(ctx, leaf) == 1;
        ssl->x509_free(leaf);
        // The rest of the PEM data: the chain up to the CA, sent with the certificate.
        while (X509* extra = ssl->pem_read_x509(bio, nullptr, nullptr, nullptr)) {
          if (ssl->ctx_ctrl(ctx, SSL_CTRL_EXTRA_CHAIN_CERT, 0, extra) != 1) ssl->x509_free(extra);
        }
      }
      ssl->bio_free(bio);
      if (!ok) return fail("cannot use the client certificate");
      ssl->err_clear_error();
    }
    if (!tls.client_key_pem.empty()) {
      BIO* bio = ssl->bio_new_mem_buf(tls.client_key_pem.data(),
                                      static_cast<int>(tls.client_key_pem.size()));
      EVP_PKEY* pkey = ssl->pem_read_private_key(bio, nullptr, nullptr, nullptr);
      ssl->bio_free(bio);
      const bool ok = pkey && ssl->ctx_use_private_key(ctx, pkey) == 1;
      if (pkey) ssl->pkey_free(pkey);
      if (!ok) return fail("cannot use the client key (does it match the certificate?)");
    }
    contexts.emplace(std::move(key), ctx);
    return ctx;
  }

  // ---- exchanges (loop thread) ----

  /// Ends `x` with a failure. Its connection, if it has one, is the caller's to close.
  void fail(Exchange& x, TransportFailure kind, std::string message) {
    x.resp.failure = kind;
    x.resp.failure_message = std::move(message);
    // Keep the status of an answer that was cut short or stopped, as libcurl's does.
    if (kind != TransportFailure::kAborted && kind != TransportFailure::kDropped &&
        kind != TransportFailure::kTimeout && kind != TransportFailure::kTooLarge) {
      x.resp.status = 0;
    }
    x.phase = Exchange::Phase::kDone;
  }

  void complete(Exchange& x) {
    x.resp.failure = TransportFailure::kNone;
    x.phase = Exchange::Phase::kDone;
  }

  /// Ends `x`: its answer is longer than the request keeps (none of it is kept).
  void too_large(Exchange& x) {
    std::string().swap(x.resp.body);
    fail(x, TransportFailure::kTooLarge, "more than " + size_text(x.req->max_body_bytes));
  }

  /// Delivers answer body bytes; false when the receiver stopped the transfer.
  bool deliver(Exchange& x, std::string_view data) {
    if (data.empty()) return true;
    if (!x.req->on_data) {
      if (append_capped(x.resp.body, data, x.req->max_body_bytes)) return true;
      too_large(x);
      return false;
    }
    if (x.req->on_data(data)) return true;
    fail(x, TransportFailure::kAborted, "stopped by the receiver");
    return false;
  }

  /// Parses the answer's head, the first `end` bytes of x.head; false when it failed.
  bool parse_head(Exchange& x, size_t end) {
    std::string_view head(x.head.data(), end);
    size_t eol = head.find('\n');
    std::string_view status_line = trim(head.substr(0, eol));
    if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12) {
      fail(x, TransportFailure::kOther, "not an HTTP/1.x answer");
      return false;
    }
    x.resp.http_version = std::string(status_line.substr(5, 3));
    int status = 0;
    for (char ch : status_line.substr(9, 3)) {
      if (ch < '0' || ch > '9') {
        fail(x, TransportFailure::kOther, "a malformed HTTP status line");
        return false;
      }
      status = status * 10 + (ch - '0');
    }
    x.resp.status = status;
    x.resp.headers.clear();
    bool chunked = false;
    std::optional<std::uint64_t> length;
    x.keep_alive = x.resp.http_version == "1.1";
    while (eol != std::string_view::npos && eol + 1 < head.size()) {
      const size_t start = eol + 1;
      eol = head.find('\n', start);
      std::string_view line = trim(
          head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start));
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (iequals(name, "Transfer-Encoding")) {
        chunked = lower(value).find("chunked") != std::string::npos;
      } else if (iequals(name, "Content-Length")) {
        std::uint64_t n = 0;
        bool digits = !value.empty() && value.size() <= 18;
        for (char ch : value) {
          digits = digits && ch >= '0' && ch <= '9';
          n = n * 10 + static_cast<std::uint64_t>(ch - '0');
        }
        if (!digits) {
          fail(x, TransportFailure::kOther, "a malformed Content-Length");
          return false;
        }
        length = n;
      } else if (iequals(name, "Connection")) {
        const std::string v = lower(value);
        if (v.find("close") != std::string::npos) x.keep_alive = false;
        if (v.find("keep-alive") != std::string::npos) x.keep_alive = true;
      }
      x.resp.headers.emplace_back(std::string(name), std::string(value));
    }
    if (x.req->method == "HEAD" || status == 204 || status == 304) {
      x.framing = Exchange::Framing::kNone;
    } else if (chunked) {
      x.framing = Exchange::Framing::kChunked;
    } else if (length) {
      if (!x.req->on_data && *length > x.req->max_body_bytes) {
        too_large(x);  // by its Content-Length: not a byte of it is read
        return false;
      }
      x.framing = Exchange::Framing::kLength;
      x.left = *length;
    } else {
      x.framing = Exchange::Framing::kUntilClose;
      x.keep_alive = false;
    }
    return true;
  }

  static std::string lower(std::string_view v) {
    std::string out(v);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return out;
  }

  /// Takes bytes read from the connection; false when the exchange has ended
  /// (complete or failed).
  bool consume(Exchange& x, std::string_view data) {
    if (!x.got_bytes) {
      // An answer has begun: the request will not be sent again.
      x.got_bytes = true;
      x.out.clear();
      x.out.shrink_to_fit();
    }
    if (x.phase != Exchange::Phase::kHead) return consume_body(x, data);
    size_t from = x.head.size() >= 3 ? x.head.size() - 3 : 0;
    x.head.append(data);
    for (;;) {
      const size_t blank = x.head.find("\r\n\r\n", from);
      // The limit holds whether or not the head's end came with the bytes over it.
      const size_t head_size = blank == std::string::npos ? x.head.size() : blank;
      if (head_size > 64 * 1024) {
        fail(x, TransportFailure::kOther, "the answer's headers exceed 64 KiB");
        return false;
      }
      if (blank == std::string::npos) return true;
      if (!parse_head(x, blank + 2)) return false;
      if (x.resp.status >= 100 && x.resp.status < 200) {
        // An interim answer (100 Continue): the real one follows.
        x.head.erase(0, blank + 4);
        from = 0;
        continue;
      }
      const std::string body = x.head.substr(blank + 4);
      x.head.clear();
      x.head.shrink_to_fit();
      x.phase = Exchange::Phase::kBody;
      if (x.req->on_headers) x.req->on_headers(x.resp.status, x.resp.headers);
      if (x.framing == Exchange::Framing::kNone ||
          (x.framing == Exchange::Framing::kLength && x.left == 0)) {
        complete(x);
        return false;
      }
      return consume_body(x, body);
    }
  }

  bool consume_body(Exchange& x, std::string_view data) {
    switch (x.framing) {
      case Exchange::Framing::kNone:
        complete(x);
        return false;
      case Exchange::Framing::kUntilClose:
        return deliver(x, data);
      case Exchange::Framing::kLength: {
        const auto n = static_cast<size_t>(std::min<std::uint64_t>(x.left, data.size()));
        if (!deliver(x, data.substr(0, n))) return false;
        x.left -= n;
        if (x.left == 0) {
          complete(x);
          return false;
        }
        return true;
      }
      case Exchange::Framing::kChunked:
        break;
    }
    while (!data.empty()) {
      switch (x.chunk) {
        case Exchange::Chunk::kData: {
          const auto n = static_cast<size_t>(std::min<std::uint64_t>(x.left, data.size()));
          if (!deliver(x, data.substr(0, n))) return false;
          data.remove_prefix(n);
          x.left -= n;
          if (x.left == 0) x.chunk = Exchange::Chunk::kDataEnd;
          break;
        }
        case Exchange::Chunk::kDataEnd: {  // the CRLF after a chunk's data
          const size_t nl = data.find('\n');
          if (nl == std::string_view::npos) return true;
          data.remove_prefix(nl + 1);
          x.chunk = Exchange::Chunk::kSize;
          break;
        }
        case Exchange::Chunk::kSize:
        case Exchange::Chunk::kTrailer: {
          const size_t nl = data.find('\n');
          x.line.append(data.substr(0, nl));
          if (x.line.size() > 4096) {
            fail(x, TransportFailure::kOther, "a malformed chunked body");
            return false;
          }
          if (nl == std::string_view::npos) return true;
          data.remove_prefix(nl + 1);
          std::string_view line = trim(x.line);
          if (x.chunk == Exchange::Chunk::kTrailer) {
            if (line.empty()) {
              complete(x);
              return false;
            }
            x.line.clear();
            break;
          }
          line = line.substr(0, line.find(';'));  // chunk extensions
          std::uint64_t size = 0;
          bool ok = !line.empty() && line.size() <= 15;
          for (char ch : line) {
            const auto c = static_cast<unsigned char>(ch);
            const int v = std::isdigit(c)    ? ch - '0'
                          : std::isxdigit(c) ? std::tolower(c) - 'a' + 10
                                             : -1;
            ok = ok && v >= 0;
            size = size * 16 + static_cast<std::uint64_t>(v < 0 ? 0 : v);
          }
          x.line.clear();
          if (!ok) {
            fail(x, TransportFailure::kOther, "a malformed chunk size in the answer");
            return false;
          }
          if (size == 0) {
            x.chunk = Exchange::Chunk::kTrailer;
          } else {
            x.left = size;
            x.chunk = Exchange::Chunk::kData;
          }
          break;
        }
      }
    }
    return true;
  }

  /// The server closed the connection in the middle of `x`.
  void on_eof(Exchange& x) {
    if (x.phase == Exchange::Phase::kSend) {
      return fail(x, TransportFailure::kDropped, "the connection closed while sending the request");
    }
    if (x.phase == Exchange::Phase::kHead) {
      return fail(x, TransportFailure::kDropped,
                  x.head.empty() ? "Empty reply from server"
                                 : "the connection closed in the middle of the answer's head");
    }
    if (x.framing == Exchange::Framing::kUntilClose) return complete(x);
    fail(x, TransportFailure::kDropped,
         x.framing == Exchange::Framing::kLength
             ? "transfer closed with " + std::to_string(x.left) + " bytes remaining to read"
             : std::string("transfer closed with outstanding read data remaining"));
  }

  // ---- connections (loop thread) ----

  void close(Link& l) {
    if (l.closed) return;
    if (l.ssl) ssl->ssl_free(l.ssl);
    if (l.fd >= 0) ::close(l.fd);
    l.ssl = nullptr;
    l.fd = -1;
    l.closed = true;
    if (!l.lean) --pooled_links[l.key];
    if (l.ex) l.ex->link = nullptr;
    l.ex = nullptr;
  }

  /// A new connection for `x` (which waits for it).
  void open_link(Exchange& x) {
    auto l = std::make_unique<Link>();
    l->key = x.key;
    l->lean = x.req->lean;
    l->addrs = x.addrs;
    l->ex = &x;
    x.link = l.get();
    if (!l->lean) ++pooled_links[l->key];
    const TlsConfig& tls = x.req->tls;
    if (x.target.tls) {
      std::string why;
      l->ctx = context(tls, why);
      if (!l->ctx) {
        fail(x, TransportFailure::kTls, why);
        close(*l);
        return;
      }
      l->name = tls.server_name.empty() ? x.target.host : tls.server_name;
      l->verify = !tls.insecure_skip_verify;
    }
    Link& link = *l;
    links.push_back(std::move(l));
    connect_next(link);
  }

  /// Connects to the next address of `l`; fails its exchange when none is left.
  void connect_next(Link& l) {
    while (l.next_addr < l.addrs.size()) {
      const auto& [addr, len] = l.addrs[l.next_addr++];
      l.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (l.fd < 0) {
        l.last_errno = errno;
        continue;
      }
      const int one = 1;
      ::setsockopt(l.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (::connect(l.fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ||
          errno == EINPROGRESS) {
        l.state = Link::State::kConnect;
        l.events = POLLOUT;
        return;
      }
      l.last_errno = errno;
      ::close(l.fd);
      l.fd = -1;
    }
    if (l.ex) {
      const Target& t = l.ex->target;
      fail(*l.ex, TransportFailure::kConnect,
           "Failed to connect to " + t.host + " port " + t.port + ": " +
               std::strerror(l.last_errno ? l.last_errno : ECONNREFUSED));
    }
    close(l);
  }

  /// The socket of `l` is connected: TLS begins, or it is ready.
  void connected(Link& l) {
    if (!l.ctx) {
      l.state = Link::State::kReady;
      return;
    }
    ssl->err_clear_error();
    l.ssl = ssl->ssl_new(l.ctx);
    if (!l.ssl || ssl->ssl_set_fd(l.ssl, l.fd) != 1) {
      return link_failed(l, TransportFailure::kTls, "cannot start TLS: " + ssl_error_text(*ssl));
    }
    const bool ip = is_ip_literal(l.name);
    if (!ip) {
      ssl->ssl_ctrl(l.ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                    const_cast<char*>(l.name.c_str()));
    }
    if (l.verify) {
      const int ok = ip ? ssl->param_set1_ip_asc(ssl->ssl_get0_param(l.ssl), l.name.c_str())
                        : ssl->ssl_set1_host(l.ssl, l.name.c_str());
      if (ok != 1) return link_failed(l, TransportFailure::kTls, "cannot check the name " + l.name);
    }
    l.state = Link::State::kHandshake;
  }

  /// The connection failed: its exchange fails (or is sent again on a new connection
  /// when a reused one turns out closed before any answer), and it is closed.
  void link_failed(Link& l, TransportFailure kind, std::string message) {
    if (Exchange* x = l.ex) {
      fail(*x, kind, std::move(message));
      retry_or_end(l);
    }
    close(l);
  }

  /// `l`'s exchange has failed: a request that met a kept-alive connection the server
  /// had closed meanwhile (nothing of an answer came) is queued again, first in line.
  void retry_or_end(Link& l) {
    Exchange& x = *l.ex;
    const bool stale =
        l.reused && !x.got_bytes && x.resends == 0 && x.resp.failure == TransportFailure::kDropped;
    if (!stale) return;
    ++x.resends;
    x.phase = Exchange::Phase::kWaiting;
    x.resp = Response{};
    x.sent = 0;
    x.head.clear();
    x.line.clear();
    x.chunk = Exchange::Chunk::kSize;
    x.link = nullptr;
    l.ex = nullptr;
    queues[x.key].push_front(&x);
  }

  /// A TLS call on `l` failed with `ret`: waits for the socket, or fails the connection.
  void tls_wait(Link& l, int ret, TransportFailure kind) {
    const int e = ssl->ssl_get_error(l.ssl, ret);
    if (e == SSL_ERROR_WANT_READ) {
      l.events = POLLIN;
      return;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
      l.events = POLLOUT;
      return;
    }
    if (l.state == Link::State::kHandshake) {
      const long verify = ssl->ssl_get_verify_result(l.ssl);
      std::string why = verify != X509_V_OK ? std::string("SSL certificate problem: ") +
                                                  ssl->verify_error_string(verify)
                                            : ssl_error_text(*ssl);
      if (why.empty()) why = "the server closed the connection during the TLS handshake";
      return link_failed(l, TransportFailure::kTls, why);
    }
    const int sys_errno = errno;
    std::string why = ssl_error_text(*ssl);
    if (why.empty() && e == SSL_ERROR_SYSCALL && ret < 0 && sys_errno != 0) {
      return link_failed(l, TransportFailure::kDropped, std::strerror(sys_errno));
    }
    if (why.empty() && (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL)) {
      return closed_by_peer(l);
    }
    link_failed(l, kind, why.empty() ? "TLS error " + std::to_string(e) : why);
  }

  /// The server closed `l`: where its exchange stood tells what that means.
  void closed_by_peer(Link& l) {
    if (Exchange* x = l.ex) {
      on_eof(*x);
      if (x->resp.failure != TransportFailure::kNone) retry_or_end(l);
    }
    close(l);
  }

  /// `l`'s exchange has ended: the connection serves the next one, or is closed.
  void exchange_ended(Link& l) {
    Exchange& x = *l.ex;
    if (x.resp.failure != TransportFailure::kNone) {
      retry_or_end(l);
      return close(l);
    }
    if (l.lean || !x.keep_alive) return close(l);
    x.link = nullptr;
    l.ex = nullptr;
    l.reused = true;
    l.events = POLLIN;  // to notice the server closing it
  }

  /// Reads or writes `n` bytes on `l` (TLS or not); the count, 0 for "wait" (events
  /// set), -1 when the connection has ended (handled).
  ssize_t io(Link& l, bool write, char* data, size_t n) {
    if (l.ssl) {
      ssl->err_clear_error();
      errno = 0;
      const int r = write ? ssl->ssl_write(l.ssl, data, static_cast<int>(n))
                          : ssl->ssl_read(l.ssl, data, static_cast<int>(n));
      if (r > 0) return r;
      tls_wait(l, r, TransportFailure::kDropped);
      return l.closed ? -1 : 0;
    }
    for (;;) {
      const ssize_t r = write ? ::send(l.fd, data, n, MSG_NOSIGNAL) : ::recv(l.fd, data, n, 0);
      if (r > 0) return r;
      if (r == 0) {
        closed_by_peer(l);
        return -1;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        l.events = write ? POLLOUT : POLLIN;
        return 0;
      }
      link_failed(l, TransportFailure::kDropped, std::strerror(errno));
      return -1;
    }
  }

  /// Moves a connection on as far as its socket allows.
  void step(Link& l, short revents) {
    if (l.state == Link::State::kConnect) {
      if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(l.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        l.last_errno = err;
        ::close(l.fd);
        l.fd = -1;
        return connect_next(l);
      }
      connected(l);
      if (l.closed) return;
    }
    if (l.state == Link::State::kHandshake) {
      ssl->err_clear_error();
      errno = 0;
      const int r = ssl->ssl_connect(l.ssl);
      if (r != 1) return tls_wait(l, r, TransportFailure::kTls);
      l.state = Link::State::kReady;
      l.events = POLLIN;
    }
    if (!l.ex) {
      // Idle: the only thing to read is the server closing it (or TLS messages such
      // as session tickets, which the read takes in).
      if (!(revents & (POLLIN | POLLERR | POLLHUP))) return;
      const ssize_t n = io(l, false, buf.data(), buf.size());
      if (n > 0) close(l);  // an answer to nothing: the connection is out of step
      return;
    }
    Exchange& x = *l.ex;
    if (x.phase == Exchange::Phase::kWaiting) x.phase = Exchange::Phase::kSend;
    while (x.phase == Exchange::Phase::kSend) {
      if (x.sent == x.out.size()) {
        x.phase = Exchange::Phase::kHead;
        x.last_byte = SteadyClock::now();
        l.events = POLLIN;
        break;
      }
      const ssize_t n = io(l, true, x.out.data() + x.sent, x.out.size() - x.sent);
      if (n <= 0) return;
      x.sent += static_cast<size_t>(n);
    }
    // Reading, until the socket has nothing more (TLS may hold decrypted bytes that
    // poll cannot see, so it is read until it asks to wait), 16 reads at most so that
    // one busy stream does not hold up the others.
    for (int reads = 0; reads < 16; ++reads) {
      const ssize_t n = io(l, false, buf.data(), buf.size());
      if (n <= 0) return;
      x.last_byte = SteadyClock::now();
      if (!consume(x, std::string_view(buf.data(), static_cast<size_t>(n)))) {
        return exchange_ended(l);
      }
    }
  }

  /// Fails `x` when one of its limits has passed or it was cancelled.
  void check_limits(Exchange& x, SteadyClock::time_point now) {
    const Request& r = *x.req;
    auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
    if (r.cancelled && r.cancelled()) {
      return fail(x, TransportFailure::kAborted, "stopped by the receiver");
    }
    const bool connecting = x.link && x.link->state != Link::State::kReady;
    if (connecting && r.connect_timeout.count() > 0 && now - x.started > r.connect_timeout) {
      return fail(x, TransportFailure::kTimeout,
                  "Connection timed out after " + ms(r.connect_timeout) + " milliseconds");
    }
    if (r.timeout.count() > 0 && now - x.started > r.timeout) {
      return fail(x, TransportFailure::kTimeout,
                  "Operation timed out after " + ms(r.timeout) + " milliseconds");
    }
    const bool reading = x.phase == Exchange::Phase::kHead || x.phase == Exchange::Phase::kBody;
    if (reading && r.read_timeout.count() > 0 && now - x.last_byte > r.read_timeout) {
      return fail(x, TransportFailure::kTimeout,
                  "no data arrived for " + ms(r.read_timeout) + " milliseconds");
    }
  }

  /// Hands waiting exchanges to idle connections, and opens connections for them up
  /// to the limit per server.
  void dispatch() {
    for (auto& [key, queue] : queues) {
      while (!queue.empty()) {
        Link* idle = nullptr;
        for (auto& l : links) {
          if (!l->closed && !l->lean && !l->ex && l->state == Link::State::kReady &&
              l->key == key) {
            idle = l.get();
            break;
          }
        }
        Exchange& x = *queue.front();
        if (idle) {
          queue.pop_front();
          idle->ex = &x;
          x.link = idle;
          x.phase = Exchange::Phase::kSend;
          step(*idle, 0);
        } else if (pooled_links[key] < options.max_host_connections) {
          queue.pop_front();
          open_link(x);
        } else {
          break;
        }
      }
    }
  }

  /// Gives the pages malloc holds free back to the system, at most once a second (as
  /// the libcurl loop does): connections come and go between ones that stay.
  void return_free_memory(SteadyClock::time_point now) {
#if defined(__GLIBC__)
    if (now - last_trim < std::chrono::seconds(1)) return;
    last_trim = now;
    malloc_trim(0);
#endif
  }

  void finish(Exchange& x) {
    std::lock_guard<std::mutex> lk(mu);
    if (--x.waiter->left == 0) done_cv.notify_all();
  }

  void run_loop() {
    t_on_loop = true;
    // A write to a connection the server closed fails with EPIPE instead of killing
    // the process: SIGPIPE stays pending on this thread.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

    std::vector<pollfd> fds;
    std::vector<Link*> polled;
    for (;;) {
      bool fresh = false;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (quit) break;
        for (Exchange* x : incoming) {
          x->started = x->last_byte = SteadyClock::now();
          live.push_back(x);
          if (x->req->lean) {
            open_link(*x);  // a stream of its own
          } else {
            queues[x->key].push_back(x);
          }
        }
        fresh = !incoming.empty();
        incoming.clear();
      }
      dispatch();
      // Limits and cancellation: looked at every 20 ms at most, not on every event of
      // hundreds of busy streams.
      const auto now = SteadyClock::now();
      const bool check = fresh || now - last_check >= std::chrono::milliseconds(20);
      if (check) last_check = now;
      for (size_t i = 0; i < live.size();) {
        Exchange& x = *live[i];
        if (check && x.phase != Exchange::Phase::kDone) {
          check_limits(x, now);
          if (x.phase == Exchange::Phase::kDone) {
            if (x.link) {
              close(*x.link);
            } else if (auto q = queues.find(x.key); q != queues.end()) {
              q->second.erase(std::remove(q->second.begin(), q->second.end(), &x), q->second.end());
            }
          }
        }
        if (x.phase == Exchange::Phase::kDone) {
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
          finish(x);
          continue;
        }
        ++i;
      }
      links.erase(
          std::remove_if(links.begin(), links.end(), [](const auto& l) { return l->closed; }),
          links.end());
      return_free_memory(now);
      fds.clear();
      polled.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      for (auto& l : links) {
        fds.push_back({l->fd, l->events, 0});
        polled.push_back(l.get());
      }
      // Limits and cancellation are looked at every 100 ms while anything runs.
      const int n = ::poll(fds.data(), fds.size(), live.empty() ? -1 : 100);
      if (n < 0) continue;
      if (fds[0].revents & POLLIN) {
        std::uint64_t count = 0;
        [[maybe_unused]] auto r = ::read(wake_fd, &count, sizeof count);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents && !polled[i - 1]->closed) step(*polled[i - 1], fds[i].revents);
      }
    }
    for (Exchange* x : live) {
      if (x->phase != Exchange::Phase::kDone) {
        fail(*x, TransportFailure::kAborted, "stopped by the receiver");
      }
      finish(*x);
    }
    for (auto& l : links) close(*l);
  }

  /// Runs `xs` (prepared) on the loop and waits for all of them.
  void run(std::vector<Exchange*>& xs) {
    std::call_once(start_once, [this] {
      wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      thread = std::thread([this] { run_loop(); });
    });
    Waiter w;
    std::unique_lock<std::mutex> lk(mu);
    for (Exchange* x : xs) {
      x->waiter = &w;
      ++w.left;
      incoming.push_back(x);
    }
    if (w.left == 0) return;
    wake();
    done_cv.wait(lk, [&] { return w.left == 0; });
  }
};

Http1Client::Http1Client(Http1Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->ssl = ssl_lib();
}

Http1Client::~Http1Client() = default;

bool Http1Client::can_run(const Request& req) const {
  return !req.body_reader && req.proxy.empty() && !req.follow_redirects && parse_target(req.url) &&
         !t_on_loop && impl_->ssl != nullptr;
}

Response Http1Client::perform(const Request& req) {
  Exchange x;
  std::vector<Exchange*> xs;
  if (impl_->prepare(x, req)) xs.push_back(&x);
  impl_->run(xs);
  return std::move(x.resp);
}

std::vector<Response> Http1Client::perform_all(const std::vector<const Request*>& reqs) {
  std::vector<Exchange> exchanges(reqs.size());
  std::vector<Exchange*> xs;
  xs.reserve(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (impl_->prepare(exchanges[i], *reqs[i])) xs.push_back(&exchanges[i]);
  }
  impl_->run(xs);
  std::vector<Response> out;
  out.reserve(reqs.size());
  for (auto& x : exchanges) out.push_back(std::move(x.resp));
  return out;
}

}  // namespace ktrain::net
