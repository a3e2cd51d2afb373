#include "net/tunnel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "base/dynlib.h"

namespace ktrain::net {

namespace {

/// libssl's functions (with libcrypto's that it pulls in), loaded when a tunnel first
/// needs TLS: the other verbs do not pay for loading them at start-up.
struct Ssl {
  const SSL_METHOD* (*client_method)() = nullptr;
  SSL_CTX* (*ctx_new)(const SSL_METHOD*) = nullptr;
  void (*ctx_free)(SSL_CTX*) = nullptr;
  long (*ctx_ctrl)(SSL_CTX*, int, long, void*) = nullptr;
  void (*ctx_set_verify)(SSL_CTX*, int, SSL_verify_cb) = nullptr;
  int (*ctx_set_default_verify_paths)(SSL_CTX*) = nullptr;
  int (*ctx_load_verify_locations)(SSL_CTX*, const char*, const char*) = nullptr;
  X509_STORE* (*ctx_get_cert_store)(const SSL_CTX*) = nullptr;
  int (*ctx_use_certificate)(SSL_CTX*, X509*) = nullptr;
  int (*ctx_use_private_key)(SSL_CTX*, EVP_PKEY*) = nullptr;
  int (*ctx_check_private_key)(const SSL_CTX*) = nullptr;
  int (*store_add_cert)(X509_STORE*, X509*) = nullptr;
  BIO* (*bio_new_mem_buf)(const void*, int) = nullptr;
  int (*bio_free)(BIO*) = nullptr;
  X509* (*pem_read_x509)(BIO*, X509**, pem_password_cb*, void*) = nullptr;
  EVP_PKEY* (*pem_read_private_key)(BIO*, EVP_PKEY**, pem_password_cb*, void*) = nullptr;
  void (*x509_free)(X509*) = nullptr;
  void (*pkey_free)(EVP_PKEY*) = nullptr;
  SSL* (*ssl_new)(SSL_CTX*) = nullptr;
  void (*ssl_free)(SSL*) = nullptr;
  int (*set_fd)(SSL*, int) = nullptr;
  long (*ssl_ctrl)(SSL*, int, long, void*) = nullptr;
  int (*set1_host)(SSL*, const char*) = nullptr;
  X509_VERIFY_PARAM* (*get0_param)(SSL*) = nullptr;
  int (*param_set1_ip_asc)(X509_VERIFY_PARAM*, const char*) = nullptr;
  int (*connect)(SSL*) = nullptr;
  int (*read)(SSL*, void*, int) = nullptr;
  int (*write)(SSL*, const void*, int) = nullptr;
  int (*get_error)(const SSL*, int) = nullptr;
  int (*pending)(const SSL*) = nullptr;
  int (*shutdown)(SSL*) = nullptr;
  long (*get_verify_result)(const SSL*) = nullptr;
  const char* (*verify_error_string)(long) = nullptr;
  unsigned long (*err_get_error)() = nullptr;
  void (*err_error_string_n)(unsigned long, char*, size_t) = nullptr;
  void (*err_clear_error)() = nullptr;
};

const Ssl& ssl_lib() {
  return load_library_once<Ssl>(
      "libssl.so.3", "needed for TLS: install libssl3 (OpenSSL 3)", [](DynamicLibrary& dl, Ssl& s) {
        dl.bind(s.client_method, "TLS_client_method");
        dl.bind(s.ctx_new, "SSL_CTX_new");
        dl.bind(s.ctx_free, "SSL_CTX_free");
        dl.bind(s.ctx_ctrl, "SSL_CTX_ctrl");
        dl.bind(s.ctx_set_verify, "SSL_CTX_set_verify");
        dl.bind(s.ctx_set_default_verify_paths, "SSL_CTX_set_default_verify_paths");
        dl.bind(s.ctx_load_verify_locations, "SSL_CTX_load_verify_locations");
        dl.bind(s.ctx_get_cert_store, "SSL_CTX_get_cert_store");
        dl.bind(s.ctx_use_certificate, "SSL_CTX_use_certificate");
        dl.bind(s.ctx_use_private_key, "SSL_CTX_use_PrivateKey");
        dl.bind(s.ctx_check_private_key, "SSL_CTX_check_private_key");
        dl.bind(s.store_add_cert, "X509_STORE_add_cert");
        dl.bind(s.bio_new_mem_buf, "BIO_new_mem_buf");
        dl.bind(s.bio_free, "BIO_free");
        dl.bind(s.pem_read_x509, "PEM_read_bio_X509");
        dl.bind(s.pem_read_private_key, "PEM_read_bio_PrivateKey");
        dl.bind(s.x509_free, "X509_free");
        dl.bind(s.pkey_free, "EVP_PKEY_free");
        dl.bind(s.ssl_new, "SSL_new");
        dl.bind(s.ssl_free, "SSL_free");
        dl.bind(s.set_fd, "SSL_set_fd");
        dl.bind(s.ssl_ctrl, "SSL_ctrl");
        dl.bind(s.set1_host, "SSL_set1_host");
        dl.bind(s.get0_param, "SSL_get0_param");
        dl.bind(s.param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
        dl.bind(s.connect, "SSL_connect");
        dl.bind(s.read, "SSL_read");
        dl.bind(s.write, "SSL_write");
        dl.bind(s.get_error, "SSL_get_error");
        dl.bind(s.pending, "SSL_pending");
        dl.bind(s.shutdown, "SSL_shutdown");
        dl.bind(s.get_verify_result, "SSL_get_verify_result");
        dl.bind(s.verify_error_string, "X509_verify_cert_error_string");
        dl.bind(s.err_get_error, "ERR_get_error");
        dl.bind(s.err_error_string_n, "ERR_error_string_n");
        dl.bind(s.err_clear_error, "ERR_clear_error");
      });
}

struct Endpoint {
  bool tls = false;
  std::string host;  ///< without brackets
  std::string port;
  std::string label;  ///< host:port as the user wrote it, for messages
};

Endpoint parse_endpoint(const std::string& url) {
  Endpoint e;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw TransportError("not a URL: " + url, TransportFailure::kNotSent);
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme == "https" || scheme == "wss") {
    e.tls = true;
  } else if (scheme != "http" && scheme != "ws") {
    throw TransportError("cannot open a stream to " + url + ": not an http(s) URL",
                         TransportFailure::kNotSent);
  }
  std::string authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  e.label = authority;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) {
      throw TransportError("bad host in " + url, TransportFailure::kNotSent);
    }
    e.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      e.port = authority.substr(close + 2);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    e.host = authority.substr(0, colon);
    e.port = authority.substr(colon + 1);
  } else {
    e.host = authority;
  }
  if (e.port.empty()) e.port = e.tls ? "443" : "80";
  if (e.host.empty()) throw TransportError("no host in " + url, TransportFailure::kNotSent);
  return e;
}

[[noreturn]] void fail(const Endpoint& e, TransportFailure kind, const std::string& detail) {
  Response r;
  r.failure = kind;
  r.failure_message = detail;
  throw TransportError(describe_failure(r, "https://" + e.label + "/"), kind);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

/// Connects within `timeout`; returns a blocking socket.
int connect_tcp(const Endpoint& e, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(e.host.c_str(), e.port.c_str(), &hints, &found); rc != 0) {
    fail(e, TransportFailure::kResolve, gai_strerror(rc));
  }
  std::string last = "no address";
  TransportFailure kind = TransportFailure::kConnect;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last = errno_text(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      rc = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
      if (rc == 0) {
        ::close(fd);
        last = "no answer within " + std::to_string(timeout.count() / 1000) + "s";
        kind = TransportFailure::kTimeout;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last = errno_text(errno);
      ::close(fd);
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(found);
    return fd;
  }
  ::freeaddrinfo(found);
  fail(e, kind, last);
}

std::string ssl_errors(const Ssl& s) {
  std::string out;
  while (unsigned long code = s.err_get_error()) {
    char buf[256];
    s.err_error_string_n(code, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

/// Every certificate in `pem`, handed to `each`; false when there is none.
template <typename F>
bool each_cert(const Ssl& s, const std::string& pem, F each) {
  BIO* bio = s.bio_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  bool any = false;
  while (X509* cert = s.pem_read_x509(bio, nullptr, nullptr, nullptr)) {
    any = true;
    each(cert);
  }
  s.bio_free(bio);
  s.err_clear_error();  // the end of the data reads as "no start line"
  return any;
}

SSL_CTX* make_context(const Ssl& s, const TlsConfig& tls, const Endpoint& e) {
  SSL_CTX* ctx = s.ctx_new(s.client_method());
  if (!ctx) fail(e, TransportFailure::kTls, "cannot set up TLS: " + ssl_errors(s));
  s.ctx_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  auto bad = [&](const std::string& what) {
    const std::string why = ssl_errors(s);
    s.ctx_free(ctx);
    fail(e, TransportFailure::kTls, what + (why.empty() ? "" : ": " + why));
  };
  if (tls.insecure_skip_verify) {
    s.ctx_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    s.ctx_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!tls.ca_pem.empty()) {
      X509_STORE* store = s.ctx_get_cert_store(ctx);
      if (!each_cert(s, tls.ca_pem, [&](X509* c) {
            s.store_add_cert(store, c);
            s.x509_free(c);
          })) {
        bad("the certificate authority data holds no PEM certificate");
      }
    } else if (!tls.ca_file.empty()) {
      if (s.ctx_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
        bad("cannot read the certificate authority " + tls.ca_file);
      }
    } else {
      s.ctx_set_default_verify_paths(ctx);
    }
  }
  if (!tls.client_cert_pem.empty()) {
    bool first = true;
    each_cert(s, tls.client_cert_pem, [&](X509* c) {
      if (first) {
        s.ctx_use_certificate(ctx, c);
        s.x509_free(c);
        first = false;
      } else {
        // The chain: the context takes ownership.
        s.ctx_ctrl(ctx, SSL_CTRL_EXTRA_CHAIN_CERT, 0, c);
      }
    });
    if (first) bad("the client certificate holds no PEM certificate");
    BIO* bio =
        s.bio_new_mem_buf(tls.client_key_pem.data(), static_cast<int>(tls.client_key_pem.size()));
    EVP_PKEY* key = s.pem_read_private_key(bio, nullptr, nullptr, nullptr);
    s.bio_free(bio);
    if (!key) bad("the client key is not a PEM private key");
    const int used = s.ctx_use_private_key(ctx, key);
    s.pkey_free(key);
    if (used != 1 || s.ctx_check_private_key(ctx) != 1) {
      bad("the client key does not match the client certificate");
    }
  }
  return ctx;
}

bool is_ip_literal(const std::string& host) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, host.c_str(), &buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

struct Tunnel::Impl {
  Endpoint endpoint;
  int net_fd = -1;
  int local_fd = -1;  ///< the caller's end, until taken
  int relay_fd = -1;  ///< our end of the pair
  int stop_pipe[2] = {-1, -1};
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  std::thread relay;
  mutable std::mutex mu;
  std::string failure;

  ~Impl() {
    if (stop_pipe[1] >= 0) {
      char c = 0;
      [[maybe_unused]] auto n = ::write(stop_pipe[1], &c, 1);
    }
    if (relay.joinable()) relay.join();
    if (ssl) ssl_lib().ssl_free(ssl);
    if (ctx) ssl_lib().ctx_free(ctx);
    for (int fd : {net_fd, local_fd, relay_fd, stop_pipe[0], stop_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void set_failure(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (failure.empty())
      failure = "the connection to " + endpoint.label + " was lost (" + what + ")";
  }

  /// Moves bytes both ways until both directions are done, one fails, or stop.
  void run() {
    const Ssl* s = ssl ? &ssl_lib() : nullptr;
    std::string to_net, to_local;
    bool net_eof = false, local_eof = false, net_shut = false, local_shut = false;
    bool read_wants_write = false, write_wants_read = false;
    constexpr std::size_t kMax = 256 * 1024;
    char buf[16 * 1024];
    while (true) {
      // Flush what can be flushed before waiting.
      if (!to_local.empty()) {
        ssize_t n = ::send(relay_fd, to_local.data(), to_local.size(), MSG_NOSIGNAL);
        if (n > 0) to_local.erase(0, static_cast<std::size_t>(n));
        if (n < 0 && errno != EAGAIN && errno != EINTR) return;  // the caller closed its end
      }
      if (net_eof && to_local.empty() && !local_shut) {
        ::shutdown(relay_fd, SHUT_WR);
        local_shut = true;
      }
      if (!to_net.empty()) {
        if (s) {
          s->err_clear_error();
          int n = s->write(ssl, to_net.data(), static_cast<int>(to_net.size()));
          if (n > 0) {
            to_net.erase(0, static_cast<std::size_t>(n));
            write_wants_read = false;
          } else {
            int err = s->get_error(ssl, n);
            if (err == SSL_ERROR_WANT_READ) {
              write_wants_read = true;
            } else if (err != SSL_ERROR_WANT_WRITE) {
              set_failure("TLS write: " + ssl_errors(*s));
              return;
            }
          }
        } else {
          ssize_t n = ::send(net_fd, to_net.data(), to_net.size(), MSG_NOSIGNAL);
          if (n > 0) to_net.erase(0, static_cast<std::size_t>(n));
          if (n < 0 && errno != EAGAIN && errno != EINTR) {
            set_failure(errno_text(errno));
            return;
          }
        }
      }
      if (local_eof && to_net.empty() && !net_shut) {
        if (s) s->shutdown(ssl);
        ::shutdown(net_fd, SHUT_WR);
        net_shut = true;
      }
      if (local_shut && net_shut) return;
      // Read what TLS already holds before polling the socket.
      if (s && !net_eof && to_local.size() < kMax && s->pending(ssl) > 0) {
        if (!read_net(*s, buf, sizeof buf, to_local, net_eof, read_wants_write)) return;
        continue;
      }
      pollfd p[3] = {{net_fd, 0, 0}, {relay_fd, 0, 0}, {stop_pipe[0], POLLIN, 0}};
      if ((!net_eof && to_local.size() < kMax) || write_wants_read) p[0].events |= POLLIN;
      if (!to_net.empty() || read_wants_write) p[0].events |= POLLOUT;
      if (!local_eof && to_net.size() < kMax) p[1].events |= POLLIN;
      if (!to_local.empty()) p[1].events |= POLLOUT;
      if (::poll(p, 3, -1) < 0) {
        if (errno == EINTR) continue;
        set_failure(errno_text(errno));
        return;
      }
      if (p[2].revents) return;  // stopped
      if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !net_eof && to_local.size() < kMax) {
        if (s) {
          if (!read_net(*s, buf, sizeof buf, to_local, net_eof, read_wants_write)) return;
        } else {
          ssize_t n = ::recv(net_fd, buf, sizeof buf, 0);
          if (n > 0) {
            to_local.append(buf, static_cast<std::size_t>(n));
          } else if (n == 0) {
            net_eof = true;
          } else if (errno != EAGAIN && errno != EINTR) {
            set_failure(errno_text(errno));
            net_eof = true;
          }
        }
      }
      if ((p[0].revents & POLLOUT) && read_wants_write && s) {
        if (!read_net(*s, buf, sizeof buf, to_local, net_eof, read_wants_write)) return;
      }
      if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !local_eof) {
        ssize_t n = ::recv(relay_fd, buf, sizeof buf, 0);
        if (n > 0) {
          to_net.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          local_eof = true;
        }
      }
    }
  }

  /// One TLS read; false when relaying must end at once.
  bool read_net(const Ssl& s, char* buf, std::size_t size, std::string& out, bool& eof,
                bool& wants_write) {
    s.err_clear_error();
    int n = s.read(ssl, buf, static_cast<int>(size));
    wants_write = false;
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      return true;
    }
    int err = s.get_error(ssl, n);
    if (err == SSL_ERROR_WANT_READ) return true;
    if (err == SSL_ERROR_WANT_WRITE) {
      wants_write = true;
      return true;
    }
    if (err == SSL_ERROR_ZERO_RETURN) {
      eof = true;
      return true;
    }
    const std::string why = ssl_errors(s);
    if (err == SSL_ERROR_SYSCALL && why.empty()) {
      // The peer closed the TCP connection without a TLS close_notify (common for
      // servers that end a stream): an end like any other, unless the socket says why.
      if (errno != 0 && errno != EAGAIN) set_failure(errno_text(errno));
      eof = true;
      return true;
    }
    set_failure("TLS read: " + (why.empty() ? std::string("error ") + std::to_string(err) : why));
    eof = true;
    return true;
  }
};

Tunnel::Tunnel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tunnel::~Tunnel() = default;

std::unique_ptr<Tunnel> Tunnel::open(const Request& req) {
  auto impl = std::make_unique<Impl>();
  impl->endpoint = parse_endpoint(req.url);
  const Endpoint& e = impl->endpoint;
  if (!req.proxy.empty()) {
    throw TransportError("cannot open a stream to " + e.label + " through the proxy " + req.proxy +
                             ": streams (exec, port-forward) go directly to the server",
                         TransportFailure::kNotSent);
  }
  impl->net_fd = connect_tcp(e, req.connect_timeout);
  if (e.tls) {
    const Ssl& s = ssl_lib();
    impl->ctx = make_context(s, req.tls, e);
    impl->ssl = s.ssl_new(impl->ctx);
    s.set_fd(impl->ssl, impl->net_fd);
    const std::string& name = req.tls.server_name.empty() ? e.host : req.tls.server_name;
    if (!is_ip_literal(name)) {
      s.ssl_ctrl(impl->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(name.c_str()));
    }
    if (!req.tls.insecure_skip_verify) {
      if (is_ip_literal(name)) {
        s.param_set1_ip_asc(s.get0_param(impl->ssl), name.c_str());
      } else {
        s.set1_host(impl->ssl, name.c_str());
      }
    }
    s.ssl_ctrl(impl->ssl, SSL_CTRL_MODE,
               SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE, nullptr);
    // The handshake is blocking, bounded by socket timeouts.
    timeval tv{};
    tv.tv_sec = std::max<long>(1, static_cast<long>(req.connect_timeout.count() / 1000));
    ::setsockopt(impl->net_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(impl->net_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    s.err_clear_error();
    // The handshake writes too: SIGPIPE is held back while it runs, and dropped.
    sigset_t pipe_only, old_mask;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
    const int connected = s.connect(impl->ssl);
    timespec zero{};
    while (sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (connected != 1) {
      const long verify = s.get_verify_result(impl->ssl);
      std::string why = verify != X509_V_OK ? s.verify_error_string(verify) : ssl_errors(s);
      if (why.empty()) why = errno == EAGAIN ? "no answer to the TLS handshake" : errno_text(errno);
      fail(e, TransportFailure::kTls, why);
    }
    timeval none{};
    ::setsockopt(impl->net_fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    ::setsockopt(impl->net_fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0 ||
      ::pipe2(impl->stop_pipe, O_CLOEXEC) != 0) {
    throw TransportError("cannot open a stream: " + errno_text(errno), TransportFailure::kOther);
  }
  impl->local_fd = pair[0];
  impl->relay_fd = pair[1];
  set_nonblocking(impl->net_fd);
  set_nonblocking(impl->relay_fd);
  Impl* raw = impl.get();
  impl->relay = std::thread([raw] {
    // TLS writes to a connection the server closed raise SIGPIPE in the writing thread:
    // here it stays blocked (and is dropped with the thread), and the write fails.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
    raw->run();
  });
  return std::unique_ptr<Tunnel>(new Tunnel(std::move(impl)));
}

int Tunnel::take_local_fd() {
  int fd = impl_->local_fd;
  impl_->local_fd = -1;
  return fd;
}

std::string Tunnel::failure() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->failure;
}

}  // namespace ktrain::net
