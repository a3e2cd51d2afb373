#include "runtime/net.h"

#include <doctest/doctest.h>
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
