#include "runtime/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/error.h"

namespace ktrain::launch {

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

namespace {

int bind_listen(in_addr_t ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw LaunchError(exit_status::kRendezvous, errno_message("socket"));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = ip;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 1024) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace

int listen_tcp(int port, const std::string& ipv4) {
  in_addr ip{};
  int fd = -1;
  if (!ipv4.empty() && ::inet_pton(AF_INET, ipv4.c_str(), &ip) == 1) {
    fd = bind_listen(ip.s_addr, port);
    if (fd < 0 && errno != EADDRNOTAVAIL) {
      throw LaunchError(exit_status::kRendezvous,
                        errno_message("cannot listen on rendezvous port " + std::to_string(port) +
                                      " of " + ipv4));
    }
  }
  if (fd < 0) fd = bind_listen(htonl(INADDR_ANY), port);
  if (fd < 0) {
    throw LaunchError(exit_status::kRendezvous,
                      errno_message("cannot listen on rendezvous port " + std::to_string(port)));
  }
  return fd;
}

int connect_tcp(const std::string& ipv4, int port, int timeout_ms) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) != 1) {
    errno = EINVAL;
    return -1;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_keepalive(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno != EINPROGRESS) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) {
    ::close(fd);
    errno = ETIMEDOUT;
    return -1;
  }
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

void set_keepalive(int fd) {
  int on = 1, idle = 30, interval = 10, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

namespace {
std::string format_addr(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return buf;
}
}  // namespace

std::string peer_address(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET) {
    return "";
  }
  return format_addr(a);
}

std::string local_address(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET) {
    return "";
  }
  return format_addr(a);
}

Connection::~Connection() {
  close();
}

Connection::Connection(Connection&& o) noexcept
    : fd_(o.fd_), reader_(std::move(o.reader_)), session_(std::move(o.session_)) {
  o.fd_ = -1;
  o.session_.reset();
}

Connection& Connection::operator=(Connection&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    reader_ = std::move(o.reader_);
    session_ = std::move(o.session_);
    o.fd_ = -1;
    o.session_.reset();
  }
  return *this;
}

void Connection::secure(Session session) {
  session_ = std::move(session);
  reader_.set_max_frame(kMaxFrame);
}

bool Connection::take(Message& out) {
  if (!reader_.next(out)) return false;
  if (session_) session_->open(out);
  return true;
}

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Connection::send(const Message& m, int timeout_ms) {
  if (fd_ < 0) return false;
  std::string data = frame(session_ ? session_->seal(m) : m);
  size_t off = 0;
  int64_t deadline = now_ms() + timeout_ms;
  while (off < data.size()) {
    ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int64_t left = deadline - now_ms();
      if (left <= 0) return false;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(left));
      continue;
    }
    return false;
  }
  return true;
}

bool Connection::read_available() {
  if (fd_ < 0) return false;
  char buf[16384];
  for (;;) {
    const size_t room = std::min(reader_.room(), sizeof buf);
    if (room == 0) return true;  // take() first
    ssize_t n = ::recv(fd_, buf, room, 0);
    if (n > 0) {
      reader_.feed(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // EOF or error
  }
}

std::optional<Message> Connection::receive(int timeout_ms, bool* eof) {
  if (eof) *eof = false;
  Message m;
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    if (take(m)) return m;
    if (fd_ < 0) {
      if (eof) *eof = true;
      return std::nullopt;
    }
    int64_t left = deadline - now_ms();
    if (left <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (r > 0 && !read_available()) {
      if (take(m)) return m;
      close();
      if (eof) *eof = true;
      return std::nullopt;
    }
  }
}

}  // namespace ktrain::launch
