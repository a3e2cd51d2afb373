#include "runtime/net.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "runtime/error.h"

using namespace ktrain::launch;

namespace {

// A connected pair: `conn` owns one end, `other` is the raw other end.
struct Pair {
  Connection conn;
  int other = -1;
  Pair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    conn = Connection(sv[0]);
    other = sv[1];
  }
  ~Pair() { ::close(other); }
  void write(const std::string& bytes) const {
    REQUIRE(::send(other, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  }
};

std::string header(uint32_t n) {
  return {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
}

}  // namespace

TEST_CASE("net: a frame header over the limit is refused before its body is read") {
  Pair p;
  p.write(header(0xFFFFFFF0u) + std::string(60000, 'x'));
  p.conn.read_available();
  int unread = 0;
  REQUIRE(::ioctl(p.conn.fd(), FIONREAD, &unread) == 0);
  CHECK(unread > 50000);  // the body stays in the socket, not in the launcher's memory
  Message m;
  CHECK_THROWS_AS(p.conn.take(m), LaunchError);
}

TEST_CASE("net: before authentication a frame may hold at most 4 KiB") {
  Pair p;
  Message big;
  big.type = "hello";
  big.set("run", std::string(5000, 'r'));
  p.write(frame(big));
  CHECK_THROWS_AS(p.conn.receive(2000), LaunchError);

  Pair q;
  Message small;
  small.type = "hello";
  small.set("run", std::string(3000, 'r'));
  q.write(frame(small));
  auto got = q.conn.receive(2000);
  REQUIRE(got);
  CHECK(got->get("run").size() == 3000);
}

namespace {

int port_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return ntohs(addr.sin_port);
}

std::string address_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

TEST_CASE(
    "net: each pod's address has its own rendezvous port; no address, or another host's, "
    "listens on all") {
  // Two pods that share a network (hostNetwork, or loopback addresses on one host):
  // the same port on each one's own address.
  const int a = listen_tcp(0, "127.0.0.2");
  const int port = port_of(a);
  CHECK(address_of(a) == "127.0.0.2");
  const int b = listen_tcp(port, "127.0.0.3");
  CHECK(address_of(b) == "127.0.0.3");
  CHECK(port_of(b) == port);
  // The port is taken on that address: a clear error, not another's listener.
  try {
    listen_tcp(port, "127.0.0.2");
    FAIL("a second listener on 127.0.0.2");
  } catch (const LaunchError& e) {
    CHECK(e.status() == exit_status::kRendezvous);
    CHECK(std::string(e.what()).find("of 127.0.0.2") != std::string::npos);
  }
  ::close(a);
  ::close(b);
  // An address that is not this host's (a pod IP the runtime does not put on an
  // interface), or none, or no IPv4 address: all addresses.
  for (const std::string ip : {"192.0.2.7", "", "fd00::1"}) {
    const int fd = listen_tcp(0, ip);
    CHECK(address_of(fd) == "0.0.0.0");
    ::close(fd);
  }
}
