#include "runtime/rendezvous.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "runtime/error.h"

using namespace ktrain::launch;

namespace {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

Config node_config(int nnodes, int rank, int port, const std::string& secret = "s3cret") {
  Config c;
  c.run = "bert-1";
  c.nnodes = nnodes;
  c.node_rank = rank;
  c.master_addr = "127.0.0.1";
  c.rdzv_port = port;
  c.master_port = 29500;
  c.rdzv_timeout_s = 60;
  c.secret = secret;
  return c;
}

NodeInfo info(const Config& c, int nproc = 2) {
  return NodeInfo{c.node_rank, c.nnodes, nproc, "pytorch", ""};
}

// Runs a non-zero node in a thread; returns its world or its error text.
std::future<std::string> join_async(Config c) {
  return std::async(std::launch::async, [c] {
    Connection conn;
    try {
      World w = join_rendezvous(c, info(c), conn);
      return "ok " + std::to_string(w.world_size()) + " " + w.master_addr + " " + w.nccl_id_hex;
    } catch (const LaunchError& e) {
      return "error " + std::to_string(e.status()) + " " + e.what();
    }
  });
}

}  // namespace

TEST_CASE("rendezvous: three nodes authenticate and all receive the same world") {
  int port = free_port();
  Config c0 = node_config(3, 0, port);
  RendezvousServer server(c0, info(c0));
  auto a = join_async(node_config(3, 2, port));
  auto b = join_async(node_config(3, 1, port));
  World w = server.gather("00ff");
  CHECK(w.world_size() == 6);
  CHECK(w.master_addr == "127.0.0.1");
  CHECK(a.get() == "ok 6 127.0.0.1 00ff");
  CHECK(b.get() == "ok 6 127.0.0.1 00ff");
  CHECK(server.peers().size() == 3);
  CHECK(server.peers()[1].is_open());
}

TEST_CASE("rendezvous: a node with the wrong secret is refused (76), the others go on") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  RendezvousServer server(c0, info(c0));
  auto gathered = std::async(std::launch::async, [&] { return server.gather(""); });
  auto intruder = join_async(node_config(2, 1, port, "guess"));
  std::string result = intruder.get();
  CHECK(result.rfind("error 76 ", 0) == 0);
  CHECK(result.find("secret") != std::string::npos);
  auto good = join_async(node_config(2, 1, port));
  World w = gathered.get();
  CHECK(w.world_size() == 4);
  CHECK(good.get() == "ok 4 127.0.0.1 ");
}

TEST_CASE("rendezvous: a timeout names the ranks that never arrived, and tells those present") {
  int port = free_port();
  Config c0 = node_config(4, 0, port);
  c0.rdzv_timeout_s = 1;
  RendezvousServer server(c0, info(c0));
  auto present = join_async(node_config(4, 2, port));
  try {
    server.gather("");
    FAIL("no timeout");
  } catch (const LaunchError& e) {
    CHECK(e.status() == 76);
    CHECK(std::string(e.what()).find("nodes 1 and 3 never arrived (2 of 4 joined)") !=
          std::string::npos);
  }
  std::string r = present.get();
  CHECK(r.rfind("error 76 node 0 gave up the rendezvous", 0) == 0);
}

TEST_CASE("rendezvous: a node that cannot reach node 0 gives up after the timeout (76)") {
  Config c = node_config(2, 1, free_port());
  c.rdzv_timeout_s = 0.5;
  Connection conn;
  try {
    join_rendezvous(c, info(c), conn);
    FAIL("joined nobody");
  } catch (const LaunchError& e) {
    CHECK(e.status() == 76);
    CHECK(std::string(e.what()).find("Connection refused") != std::string::npos);
  }
}

TEST_CASE("rendezvous: nodes that disagree on processes per node end it for everyone") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  RendezvousServer server(c0, info(c0, 4));
  auto other = join_async(node_config(2, 1, port));
  CHECK_THROWS_WITH_AS(server.gather(""),
                       "nodes disagree on processes per node: node 0 has 4, node 1 has 2",
                       LaunchError);
  CHECK(other.get().find("nodes disagree") != std::string::npos);
}

TEST_CASE("rendezvous: the proofs bind the secret, the run and both nonces") {
  CHECK(server_proof("k", "run", "a", "b") != server_proof("k", "run", "b", "a"));
  CHECK(server_proof("k", "run", "a", "b") != server_proof("k2", "run", "a", "b"));
  CHECK(client_proof("k", "run", "a", "b", "hello") != client_proof("k", "run", "a", "b", "hellO"));
  CHECK(client_proof("k", "run", "a", "b", "") != server_proof("k", "run", "b", "a"));
}
