#include "net/lean_http1.h"

#include <arpa/inet.h>
#include <fcntl.h>
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
#include <map>
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
/// same library libcurl runs on, loaded when the first lean stream starts.
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

/// OpenSSL, or nullptr when it cannot be loaded (lean streams then go through libcurl).
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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
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

/// One request in flight.
struct Conn {
  enum class Phase { kConnect, kHandshake, kSend, kHead, kBody, kDone };
  enum class Framing { kUntilClose, kLength, kChunked, kNone };
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };

  const Request* req = nullptr;
  Response resp;
  Target target;
  std::vector<std::pair<sockaddr_storage, socklen_t>> addrs;
  size_t next_addr = 0;
  int last_errno = 0;
  SSL_CTX* ctx = nullptr;
  int fd = -1;
  SSL* ssl = nullptr;
  Phase phase = Phase::kConnect;
  short events = POLLOUT;
  std::string out;   ///< the request, then what is left of it to send
  std::string head;  ///< the response's head, until its blank line
  Framing framing = Framing::kUntilClose;
  Chunk chunk = Chunk::kSize;
  std::uint64_t left = 0;  ///< bytes left of the Content-Length or of the current chunk
  std::string line;        ///< a chunk-size or trailer line being read
  SteadyClock::time_point started, last_byte;
  bool done = false;  ///< set under the loop's mutex when the response is complete
};

}  // namespace

struct LeanHttp1::Impl {
  std::string user_agent;
  const SslLib* ssl = nullptr;

  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<Conn*> incoming;
  bool quit = false;
  int wake_fd = -1;
  std::once_flag start_once;
  std::thread thread;
  /// Addresses of the hosts resolved lately (as libcurl keeps them, for a minute), so
  /// that hundreds of streams starting together resolve once.
  using Addresses = std::vector<std::pair<sockaddr_storage, socklen_t>>;
  std::mutex dns_mu;
  std::map<std::string, std::pair<SteadyClock::time_point, Addresses>> dns;

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

  /// One TLS context per TLS setting (loop thread only): every stream to a server shares
  /// its trust store and client certificate.
  std::map<std::string, SSL_CTX*> contexts;
  SteadyClock::time_point last_trim{}, last_check{};
  /// Where the loop reads into (one for all connections; not thread_local, which every
  /// thread of the process would have a copy of).
  std::array<char, 16384> buf{};

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
    // A server that closes without a TLS close_notify ends the stream as libcurl
    // takes it; a body cut short is still told by its framing (chunks, length).
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

  // ---- one connection (loop thread) ----

  void close(Conn& c) {
    if (c.ssl) ssl->ssl_free(c.ssl);
    if (c.fd >= 0) ::close(c.fd);
    c.ssl = nullptr;
    c.fd = -1;
    c.phase = Conn::Phase::kDone;
    c.out.clear();
    c.out.shrink_to_fit();
    c.head.clear();
    c.head.shrink_to_fit();
  }

  void fail(Conn& c, TransportFailure kind, std::string message) {
    c.resp.failure = kind;
    c.resp.failure_message = std::move(message);
    // Keep the status of an answer that was cut short or stopped, as libcurl's does.
    if (kind != TransportFailure::kAborted && kind != TransportFailure::kDropped &&
        kind != TransportFailure::kTimeout) {
      c.resp.status = 0;
    }
    close(c);
  }

  void complete(Conn& c) {
    c.resp.failure = TransportFailure::kNone;
    close(c);
  }

  /// Connects to the next address; false (and the connection failed) when none is left.
  void connect_next(Conn& c) {
    while (c.next_addr < c.addrs.size()) {
      const auto& [addr, len] = c.addrs[c.next_addr++];
      c.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (c.fd < 0) {
        c.last_errno = errno;
        continue;
      }
      const int one = 1;
      ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ||
          errno == EINPROGRESS) {
        c.phase = Conn::Phase::kConnect;
        c.events = POLLOUT;
        return;
      }
      c.last_errno = errno;
      ::close(c.fd);
      c.fd = -1;
    }
    fail(c, TransportFailure::kConnect,
         "Failed to connect to " + c.target.host + " port " + c.target.port + ": " +
             std::strerror(c.last_errno ? c.last_errno : ECONNREFUSED));
  }

  void start(Conn& c) {
    c.started = c.last_byte = SteadyClock::now();
    const Request& r = *c.req;
    bool has_host = false, has_accept = false, has_agent = false;
    for (const auto& [k, v] : r.headers) {
      has_host = has_host || iequals(k, "Host");
      has_accept = has_accept || iequals(k, "Accept");
      has_agent = has_agent || iequals(k, "User-Agent");
    }
    c.out = "GET " + c.target.target + " HTTP/1.1\r\n";
    if (!has_host) c.out += "Host: " + c.target.authority + "\r\n";
    if (!has_agent) c.out += "User-Agent: " + user_agent + "\r\n";
    if (!has_accept) c.out += "Accept: */*\r\n";
    for (const auto& [k, v] : r.headers) c.out += k + ": " + v + "\r\n";
    c.out += "\r\n";
    if (c.target.tls) {
      std::string why;
      c.ctx = context(r.tls, why);
      if (!c.ctx) return fail(c, TransportFailure::kTls, why);
    }
    connect_next(c);
  }

  /// The socket is connected: TLS begins, or the request goes out.
  void connected(Conn& c) {
    if (!c.target.tls) {
      c.phase = Conn::Phase::kSend;
      return;
    }
    ssl->err_clear_error();
    c.ssl = ssl->ssl_new(c.ctx);
    if (!c.ssl || ssl->ssl_set_fd(c.ssl, c.fd) != 1) {
      return fail(c, TransportFailure::kTls, "cannot start TLS: " + ssl_error_text(*ssl));
    }
    const TlsConfig& tls = c.req->tls;
    const std::string& name = tls.server_name.empty() ? c.target.host : tls.server_name;
    const bool ip = is_ip_literal(name);
    if (!ip) {
      ssl->ssl_ctrl(c.ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                    const_cast<char*>(name.c_str()));
    }
    if (!tls.insecure_skip_verify) {
      const int ok = ip ? ssl->param_set1_ip_asc(ssl->ssl_get0_param(c.ssl), name.c_str())
                        : ssl->ssl_set1_host(c.ssl, name.c_str());
      if (ok != 1) return fail(c, TransportFailure::kTls, "cannot check the name " + name);
    }
    c.phase = Conn::Phase::kHandshake;
  }

  /// Delivers response body bytes; false when the receiver stopped the transfer.
  bool deliver(Conn& c, std::string_view data) {
    if (data.empty()) return true;
    if (!c.req->on_data) {
      c.resp.body.append(data);
      return true;
    }
    if (c.req->on_data(data)) return true;
    fail(c, TransportFailure::kAborted, "stopped by the receiver");
    return false;
  }

  /// Parses the response head, the first `end` bytes of c.head; false when it failed.
  bool parse_head(Conn& c, size_t end) {
    std::string_view head(c.head.data(), end);
    size_t eol = head.find('\n');
    std::string_view status_line = trim(head.substr(0, eol));
    if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12) {
      fail(c, TransportFailure::kOther, "not an HTTP/1.x answer");
      return false;
    }
    c.resp.http_version = std::string(status_line.substr(5, 3));
    int status = 0;
    for (char ch : status_line.substr(9, 3)) {
      if (ch < '0' || ch > '9') {
        fail(c, TransportFailure::kOther, "a malformed HTTP status line");
        return false;
      }
      status = status * 10 + (ch - '0');
    }
    c.resp.status = status;
    c.resp.headers.clear();
    bool chunked = false;
    std::optional<std::uint64_t> length;
    while (eol != std::string_view::npos && eol + 1 < head.size()) {
      const size_t start = eol + 1;
      eol = head.find('\n', start);
      std::string_view line = trim(
          head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start));
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (iequals(name, "Transfer-Encoding")) {
        std::string v(value);
        std::transform(v.begin(), v.end(), v.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        chunked = v.find("chunked") != std::string::npos;
      } else if (iequals(name, "Content-Length")) {
        std::uint64_t n = 0;
        bool digits = !value.empty();
        for (char ch : value) {
          digits = digits && ch >= '0' && ch <= '9';
          n = n * 10 + static_cast<std::uint64_t>(ch - '0');
        }
        if (!digits) {
          fail(c, TransportFailure::kOther, "a malformed Content-Length");
          return false;
        }
        length = n;
      }
      c.resp.headers.emplace_back(std::string(name), std::string(value));
    }
    if (status == 204 || status == 304) {
      c.framing = Conn::Framing::kNone;
    } else if (chunked) {
      c.framing = Conn::Framing::kChunked;
    } else if (length) {
      c.framing = Conn::Framing::kLength;
      c.left = *length;
    } else {
      c.framing = Conn::Framing::kUntilClose;
    }
    return true;
  }

  /// Takes bytes read from the connection; false when the connection has finished
  /// (complete or failed).
  bool consume(Conn& c, std::string_view data) {
    if (c.phase != Conn::Phase::kHead) return consume_body(c, data);
    size_t from = c.head.size() >= 3 ? c.head.size() - 3 : 0;
    c.head.append(data);
    for (;;) {
      const size_t blank = c.head.find("\r\n\r\n", from);
      if (blank == std::string::npos) {
        if (c.head.size() <= 64 * 1024) return true;
        fail(c, TransportFailure::kOther, "the response's headers exceed 64 KiB");
        return false;
      }
      if (!parse_head(c, blank + 2)) return false;
      if (c.resp.status >= 100 && c.resp.status < 200) {
        // An interim answer (100 Continue): the real one follows.
        c.head.erase(0, blank + 4);
        from = 0;
        continue;
      }
      const std::string body = c.head.substr(blank + 4);
      c.head.clear();
      c.head.shrink_to_fit();
      c.phase = Conn::Phase::kBody;
      if (c.req->on_headers) c.req->on_headers(c.resp.status, c.resp.headers);
      if (c.framing == Conn::Framing::kNone ||
          (c.framing == Conn::Framing::kLength && c.left == 0)) {
        complete(c);
        return false;
      }
      return consume_body(c, body);
    }
  }

  bool consume_body(Conn& c, std::string_view data) {
    switch (c.framing) {
      case Conn::Framing::kNone:
        complete(c);
        return false;
      case Conn::Framing::kUntilClose:
        return deliver(c, data);
      case Conn::Framing::kLength: {
        const auto n = static_cast<size_t>(std::min<std::uint64_t>(c.left, data.size()));
        if (!deliver(c, data.substr(0, n))) return false;
        c.left -= n;
        if (c.left == 0) {
          complete(c);
          return false;
        }
        return true;
      }
      case Conn::Framing::kChunked:
        break;
    }
    while (!data.empty()) {
      switch (c.chunk) {
        case Conn::Chunk::kData: {
          const auto n = static_cast<size_t>(std::min<std::uint64_t>(c.left, data.size()));
          if (!deliver(c, data.substr(0, n))) return false;
          data.remove_prefix(n);
          c.left -= n;
          if (c.left == 0) c.chunk = Conn::Chunk::kDataEnd;
          break;
        }
        case Conn::Chunk::kDataEnd: {  // the CRLF after a chunk's data
          const size_t nl = data.find('\n');
          if (nl == std::string_view::npos) return true;
          data.remove_prefix(nl + 1);
          c.chunk = Conn::Chunk::kSize;
          break;
        }
        case Conn::Chunk::kSize:
        case Conn::Chunk::kTrailer: {
          const size_t nl = data.find('\n');
          c.line.append(data.substr(0, nl));
          if (c.line.size() > 4096) {
            fail(c, TransportFailure::kOther, "a malformed chunked body");
            return false;
          }
          if (nl == std::string_view::npos) return true;
          data.remove_prefix(nl + 1);
          std::string_view line = trim(c.line);
          if (c.chunk == Conn::Chunk::kTrailer) {
            if (line.empty()) {
              complete(c);
              return false;
            }
            c.line.clear();
            break;
          }
          line = line.substr(0, line.find(';'));  // chunk extensions
          std::uint64_t size = 0;
          bool ok = !line.empty() && line.size() <= 15;
          for (char ch : line) {
            const int v = std::isxdigit(static_cast<unsigned char>(ch))
                              ? (std::isdigit(static_cast<unsigned char>(ch))
                                     ? ch - '0'
                                     : std::tolower(static_cast<unsigned char>(ch)) - 'a' + 10)
                              : -1;
            ok = ok && v >= 0;
            size = size * 16 + static_cast<std::uint64_t>(v < 0 ? 0 : v);
          }
          c.line.clear();
          if (!ok) {
            fail(c, TransportFailure::kOther, "a malformed chunk size in the response");
            return false;
          }
          if (size == 0) {
            c.chunk = Conn::Chunk::kTrailer;
          } else {
            c.left = size;
            c.chunk = Conn::Chunk::kData;
          }
          break;
        }
      }
    }
    return true;
  }

  /// The server closed the connection.
  void on_eof(Conn& c) {
    if (c.phase == Conn::Phase::kHead) {
      return fail(c, TransportFailure::kDropped,
                  c.head.empty() ? "Empty reply from server"
                                 : "the connection closed in the middle of the response head");
    }
    if (c.framing == Conn::Framing::kUntilClose) return complete(c);
    fail(c, TransportFailure::kDropped,
         c.framing == Conn::Framing::kLength
             ? "transfer closed with " + std::to_string(c.left) + " bytes remaining to read"
             : std::string("transfer closed with outstanding read data remaining"));
  }

  /// A TLS call failed with `ret`: waits for the socket (true), or fails the connection.
  bool tls_wait(Conn& c, int ret, TransportFailure kind) {
    const int e = ssl->ssl_get_error(c.ssl, ret);
    if (e == SSL_ERROR_WANT_READ) {
      c.events = POLLIN;
      return true;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
      c.events = POLLOUT;
      return true;
    }
    if (c.phase == Conn::Phase::kHandshake) {
      const long verify = ssl->ssl_get_verify_result(c.ssl);
      std::string why = verify != X509_V_OK ? std::string("SSL certificate problem: ") +
                                                  ssl->verify_error_string(verify)
                                            : ssl_error_text(*ssl);
      if (why.empty()) why = "the server closed the connection during the TLS handshake";
      fail(c, TransportFailure::kTls, why);
      return false;
    }
    const int sys_errno = errno;
    std::string why = ssl_error_text(*ssl);
    if (why.empty() && e == SSL_ERROR_SYSCALL && ret < 0 && sys_errno != 0) {
      why = std::strerror(sys_errno);  // reset by the peer, ...
      kind = TransportFailure::kDropped;
    } else if (why.empty() && (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL)) {
      // The peer closed (politely or not): where the response stood tells what it means.
      if (c.phase == Conn::Phase::kSend) {
        fail(c, TransportFailure::kDropped, "the connection closed while sending the request");
      } else {
        on_eof(c);
      }
      return false;
    }
    fail(c, kind, why.empty() ? "TLS error " + std::to_string(e) : why);
    return false;
  }

  /// Moves a connection on as far as its socket allows.
  void step(Conn& c, short revents) {
    if (c.phase == Conn::Phase::kConnect) {
      if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        c.last_errno = err;
        ::close(c.fd);
        c.fd = -1;
        connect_next(c);
        return;
      }
      connected(c);
      if (c.phase == Conn::Phase::kDone) return;
    }
    if (c.phase == Conn::Phase::kHandshake) {
      ssl->err_clear_error();
      errno = 0;
      const int r = ssl->ssl_connect(c.ssl);
      if (r != 1) {
        tls_wait(c, r, TransportFailure::kTls);
        return;
      }
      c.phase = Conn::Phase::kSend;
    }
    if (c.phase == Conn::Phase::kSend) {
      while (!c.out.empty()) {
        if (c.ssl) {
          ssl->err_clear_error();
          errno = 0;
          const int n = ssl->ssl_write(c.ssl, c.out.data(), static_cast<int>(c.out.size()));
          if (n <= 0) {
            tls_wait(c, n, TransportFailure::kDropped);
            return;
          }
          c.out.erase(0, static_cast<size_t>(n));
        } else {
          const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
          if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
              c.events = POLLOUT;
              return;
            }
            return fail(c, TransportFailure::kDropped,
                        std::string("sending the request failed: ") + std::strerror(errno));
          }
          c.out.erase(0, static_cast<size_t>(n));
        }
      }
      c.out.shrink_to_fit();
      c.phase = Conn::Phase::kHead;
      c.events = POLLIN;
    }
    // Reading: until the socket has nothing more (TLS may hold decrypted bytes that
    // poll cannot see, so it is read until it asks to wait).
    // At most 16 reads at a time, so that one busy stream does not hold up the others.
    for (int reads = 0;
         reads < 16 && (c.phase == Conn::Phase::kHead || c.phase == Conn::Phase::kBody); ++reads) {
      if (c.ssl) {
        ssl->err_clear_error();
        errno = 0;
        const int n = ssl->ssl_read(c.ssl, buf.data(), static_cast<int>(buf.size()));
        if (n <= 0) {
          tls_wait(c, n, TransportFailure::kDropped);
          return;
        }
        c.last_byte = SteadyClock::now();
        if (!consume(c, std::string_view(buf.data(), static_cast<size_t>(n)))) return;
      } else {
        const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
        if (n == 0) return on_eof(c);
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c.events = POLLIN;
            return;
          }
          return fail(c, TransportFailure::kDropped,
                      std::string("reading the response failed: ") + std::strerror(errno));
        }
        c.last_byte = SteadyClock::now();
        if (!consume(c, std::string_view(buf.data(), static_cast<size_t>(n)))) return;
      }
    }
  }

  /// Fails `c` when one of its limits has passed or it was cancelled.
  void check_limits(Conn& c, SteadyClock::time_point now) {
    const Request& r = *c.req;
    auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
    if (r.cancelled && r.cancelled())
      return fail(c, TransportFailure::kAborted, "stopped by the receiver");
    const bool connecting = c.phase == Conn::Phase::kConnect || c.phase == Conn::Phase::kHandshake;
    if (connecting && r.connect_timeout.count() > 0 && now - c.started > r.connect_timeout) {
      return fail(c, TransportFailure::kTimeout,
                  "Connection timed out after " + ms(r.connect_timeout) + " milliseconds");
    }
    if (r.timeout.count() > 0 && now - c.started > r.timeout) {
      return fail(c, TransportFailure::kTimeout,
                  "Operation timed out after " + ms(r.timeout) + " milliseconds");
    }
    if (!connecting && r.read_timeout.count() > 0 && now - c.last_byte > r.read_timeout) {
      return fail(c, TransportFailure::kTimeout,
                  "no data arrived for " + ms(r.read_timeout) + " milliseconds");
    }
  }

  /// Gives the pages malloc holds free back to the system, at most once a second (as
  /// the libcurl loop does): connections come and go between ones that stay.
  void return_free_memory() {
#if defined(__GLIBC__)
    const auto now = SteadyClock::now();
    if (now - last_trim < std::chrono::seconds(1)) return;
    last_trim = now;
    malloc_trim(0);
#endif
  }

  void run_loop() {
    t_on_loop = true;
    // A write to a connection the server closed fails with EPIPE instead of killing
    // the process: SIGPIPE stays pending on this thread.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

    std::vector<Conn*> active;
    std::vector<pollfd> fds;
    auto finish = [&](Conn& c) {
      std::lock_guard<std::mutex> lk(mu);
      c.done = true;
      done_cv.notify_all();
    };
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu);
        if (quit) break;
        for (Conn* c : incoming) active.push_back(c);
        incoming.clear();
      }
      for (Conn* c : active) {
        if (c->fd < 0 && c->phase == Conn::Phase::kConnect) start(*c);
      }
      // Limits and cancellation: looked at every 20 ms at most, not on every event of
      // hundreds of busy streams.
      const auto now = SteadyClock::now();
      const bool check = now - last_check >= std::chrono::milliseconds(20);
      if (check) last_check = now;
      for (size_t i = 0; i < active.size();) {
        Conn& c = *active[i];
        if (check && c.phase != Conn::Phase::kDone) check_limits(c, now);
        if (c.phase == Conn::Phase::kDone) {
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
          finish(c);
          continue;
        }
        ++i;
      }
      return_free_memory();
      fds.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      for (Conn* c : active) fds.push_back({c->fd, c->events, 0});
      // Limits and cancellation are looked at every 100 ms while anything runs.
      const int n = ::poll(fds.data(), fds.size(), active.empty() ? -1 : 100);
      if (n < 0) continue;
      if (fds[0].revents & POLLIN) {
        std::uint64_t count = 0;
        [[maybe_unused]] auto r = ::read(wake_fd, &count, sizeof count);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents) step(*active[i - 1], fds[i].revents);
      }
    }
    for (Conn* c : active) {
      fail(*c, TransportFailure::kAborted, "stopped by the receiver");
      finish(*c);
    }
  }
};

LeanHttp1::LeanHttp1(std::string user_agent) : impl_(std::make_unique<Impl>()) {
  impl_->user_agent = std::move(user_agent);
  impl_->ssl = ssl_lib();
}

LeanHttp1::~LeanHttp1() = default;

bool LeanHttp1::can_run(const Request& req) const {
  if (req.method != "GET" || !req.body.empty() || req.body_reader || !req.proxy.empty() ||
      req.follow_redirects || !parse_target(req.url)) {
    return false;
  }
  // A callback of a lean stream that makes a request of its own: not on this loop,
  // which would wait for itself.
  return !t_on_loop && impl_->ssl != nullptr;
}

Response LeanHttp1::perform(const Request& req) {
  Conn c;
  c.req = &req;
  auto target = parse_target(req.url);
  if (!target || !impl_->ssl) {
    c.resp.failure = TransportFailure::kOther;
    c.resp.failure_message = "not a request for a lean HTTP/1.1 stream";
    return std::move(c.resp);
  }
  c.target = std::move(*target);
  if (!impl_->resolve(c.target, c.addrs)) {
    c.resp.failure = TransportFailure::kResolve;
    c.resp.failure_message = "Could not resolve host: " + c.target.host;
    return std::move(c.resp);
  }

  Impl& im = *impl_;
  std::call_once(im.start_once, [&im] {
    im.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    im.thread = std::thread([&im] { im.run_loop(); });
  });
  std::unique_lock<std::mutex> lk(im.mu);
  im.incoming.push_back(&c);
  im.wake();
  im.done_cv.wait(lk, [&] { return c.done; });
  return std::move(c.resp);
}

}  // namespace ktrain::net
