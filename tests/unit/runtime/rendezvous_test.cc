#include "runtime/rendezvous.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <thread>

#include "runtime/error.h"
#include "runtime/peer_link.h"
#include "runtime/sha256.h"

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

// Runs a non-zero node in a thread; keeps its connection to node 0.
struct JoinedNode {
  std::string result;  // "ok" or the error
  Connection conn;
};
std::future<JoinedNode> join_keep(Config c) {
  return std::async(std::launch::async, [c] {
    JoinedNode j;
    try {
      join_rendezvous(c, info(c), j.conn);
      j.result = "ok";
    } catch (const LaunchError& e) {
      j.result = e.what();
    }
    return j;
  });
}

// Connects to node 0 by hand (a client that speaks the protocol itself).
Connection raw_connect(int port) {
  int fd = connect_tcp("127.0.0.1", port, 2000);
  REQUIRE(fd >= 0);
  return Connection(fd);
}

Message raw_hello(const std::string& node_rank, const std::string& cnonce) {
  Message m;
  m.type = "hello";
  m.set("version", "2");
  m.set("run", "bert-1");
  m.set("node_rank", node_rank);
  m.set("nnodes", "2");
  m.set("nproc", "2");
  m.set("framework", "pytorch");
  m.set("addr", "");
  m.set("cnonce", cnonce);
  return m;
}

bool wait_readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// Whether node 0 has closed this end's connection.
bool closed_by_peer(int fd) {
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
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

TEST_CASE("rendezvous: a 'reject' from a node 0 that has not proved the secret is not believed") {
  int port = free_port();
  int lfd = listen_tcp(port);
  std::atomic<bool> stop{false};
  std::thread impostor([&] {  // refuses every hello at once, without a challenge
    while (!stop) {
      if (!wait_readable(lfd, 50)) continue;
      int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) continue;
      Connection c(fd);
      c.receive(2000);
      Message r;
      r.type = "reject";
      r.set("reason", "go away");
      c.send(r);
    }
  });
  Config c = node_config(2, 1, port);
  c.rdzv_timeout_s = 1.5;
  Connection conn;
  std::string error;
  try {
    join_rendezvous(c, info(c), conn);
  } catch (const LaunchError& e) {
    error = e.what();
  }
  stop = true;
  impostor.join();
  ::close(lfd);
  CHECK(error.find("timed out") != std::string::npos);
  CHECK(error.find("without proving") != std::string::npos);
}

TEST_CASE("rendezvous: control messages are authenticated; forged ones are not believed") {
  for (const bool towards_node0 : {true, false}) {
    CAPTURE(towards_node0);
    int port = free_port();
    Config c0 = node_config(2, 0, port);
    RendezvousServer server(c0, info(c0));
    auto joining = join_keep(node_config(2, 1, port));
    server.gather("");
    JoinedNode node1 = joining.get();
    REQUIRE(node1.result == "ok");
    ServerLink link(server.peers());
    ClientLink client(node1.conn);
    const int at_node0 = server.peers()[1].fd(), at_node1 = node1.conn.fd();

    // What the nodes send arrives.
    client.local_failed("rank 3 exited 1");
    REQUIRE(wait_readable(at_node0, 2000));
    CHECK(link.on_readable(at_node0) == std::optional<std::string>("rank 3 exited 1"));

    // A message written into the stream by someone else is not taken for theirs:
    // a 'done' for node 1's, or a 'stop' for node 0's.
    Message forged;
    forged.type = towards_node0 ? "done" : "stop";
    forged.set("cause", "forged cause");
    const std::string bytes = frame(forged);
    REQUIRE(::send(towards_node0 ? at_node1 : at_node0, bytes.data(), bytes.size(), 0) ==
            static_cast<ssize_t>(bytes.size()));
    ServerLink fresh(server.peers());
    PeerLink& receiver = towards_node0 ? static_cast<PeerLink&>(fresh) : client;
    const int fd = towards_node0 ? at_node0 : at_node1;
    REQUIRE(wait_readable(fd, 2000));
    auto cause = receiver.on_readable(fd);
    REQUIRE(cause.has_value());
    CHECK(cause->find("forged cause") == std::string::npos);
    CHECK(cause->find("failed authentication") != std::string::npos);
  }
}

TEST_CASE("rendezvous: a control message sent again is refused as a replay") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  RendezvousServer server(c0, info(c0));
  auto joining = join_keep(node_config(2, 1, port));
  server.gather("");
  JoinedNode node1 = joining.get();
  REQUIRE(node1.result == "ok");
  const int at_node0 = server.peers()[1].fd();
  ClientLink client(node1.conn);
  client.local_done();
  REQUIRE(wait_readable(at_node0, 2000));
  char buf[4096];
  ssize_t n = ::recv(at_node0, buf, sizeof buf, 0);  // taken off the wire
  REQUIRE(n > 0);
  const std::string sealed(buf, static_cast<size_t>(n));
  for (int i = 0; i < 2; ++i) {
    REQUIRE(::send(node1.conn.fd(), sealed.data(), sealed.size(), 0) == n);
  }
  ServerLink link(server.peers());
  std::optional<std::string> cause;
  for (int i = 0; i < 20 && !cause && wait_readable(at_node0, 200); ++i) {
    cause = link.on_readable(at_node0);
  }
  REQUIRE(cause.has_value());
  CHECK(cause->find("out of sequence") != std::string::npos);
}

TEST_CASE("rendezvous: a node rank that would wrap around an int gets no challenge") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  c0.rdzv_timeout_s = 1.5;
  RendezvousServer server(c0, info(c0));
  auto gathered = std::async(std::launch::async, [&] {
    try {
      server.gather("");
      return std::string("joined");
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
  });
  Connection conn = raw_connect(port);
  REQUIRE(conn.send(raw_hello("4294967297", to_hex(random_bytes(16)))));  // 1 + 2^32
  bool eof = false;
  auto answer = conn.receive(3000, &eof);
  CHECK_FALSE(answer.has_value());
  CHECK(eof);
  CHECK(gathered.get().find("node 1 never arrived") != std::string::npos);
}

TEST_CASE(
    "rendezvous: node 0 holds at most 16 connections mid-handshake; a real node still joins") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  RendezvousServer server(c0, info(c0));
  auto gathered = std::async(std::launch::async, [&] { return server.gather(""); });
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    int fd = connect_tcp("127.0.0.1", port, 2000);
    REQUIRE(fd >= 0);
    idle.push_back(fd);
  }
  int closed = 0;
  for (int64_t end = now_ms() + 5000; now_ms() < end;) {
    closed = 0;
    for (int fd : idle) closed += closed_by_peer(fd);
    if (closed >= 84) break;
    ::usleep(20000);
  }
  CHECK(closed == 84);
  CHECK_FALSE(closed_by_peer(idle.back()));  // the oldest go first
  auto node1 = join_async(node_config(2, 1, port));
  CHECK(gathered.get().world_size() == 4);
  CHECK(node1.get() == "ok 4 127.0.0.1 ");
  for (int fd : idle) ::close(fd);
}

TEST_CASE("rendezvous: a connection that does not finish the handshake in time is closed") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  RendezvousLimits limits;
  limits.handshake_ms = 300;
  RendezvousServer server(c0, info(c0), limits);
  auto gathered = std::async(std::launch::async, [&] { return server.gather(""); });
  const int64_t start = now_ms();
  Connection silent = raw_connect(port);
  Connection slow = raw_connect(port);  // sends its hello, never its auth
  REQUIRE(slow.send(raw_hello("1", to_hex(random_bytes(16)))));
  REQUIRE(slow.receive(2000));  // the challenge
  bool eof = false;
  CHECK_FALSE(silent.receive(3000, &eof).has_value());
  CHECK(eof);
  CHECK_FALSE(slow.receive(3000, &eof).has_value());
  CHECK(eof);
  CHECK(now_ms() - start < 3000);
  auto node1 = join_async(node_config(2, 1, port));
  CHECK(gathered.get().world_size() == 4);
  CHECK(node1.get() == "ok 4 127.0.0.1 ");
}

TEST_CASE("rendezvous: node 0's refusal, once it has proved the secret, ends the node (76)") {
  int port = free_port();
  Config c0 = node_config(2, 0, port);
  c0.rdzv_timeout_s = 5;
  RendezvousServer server(c0, info(c0));
  auto gathered = std::async(std::launch::async, [&] {
    try {
      server.gather("");
      return std::string("joined");
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
  });
  Config other = node_config(2, 1, port);
  other.run = "gpt-2";
  const int64_t start = now_ms();
  auto refused = join_async(other);
  CHECK(refused.get() ==
        "error 76 node 0 refused this node: it belongs to run 'gpt-2', node 0 to run 'bert-1'");
  CHECK(now_ms() - start < 3000);

  // A node of another protocol version is told so, in a sealed reject.
  Connection conn = raw_connect(port);
  const std::string cnonce = to_hex(random_bytes(16));
  Message hello = raw_hello("1", cnonce);
  hello.fields[0].second = "1";  // version
  REQUIRE(conn.send(hello));
  auto challenge = conn.receive(2000);
  REQUIRE(challenge);
  const std::string snonce = challenge->get("snonce");
  CHECK(challenge->get("proof") == server_proof("s3cret", "bert-1", cnonce, snonce));
  Message auth;
  auth.type = "auth";
  auth.set("mac", client_proof("s3cret", "bert-1", snonce, cnonce, encode_body(hello)));
  REQUIRE(conn.send(auth));
  conn.secure(Session(session_key("s3cret", "bert-1", snonce, cnonce), SessionRole::kNode));
  auto reject = conn.receive(2000);
  REQUIRE(reject);
  CHECK(reject->type == "reject");
  CHECK(reject->get("reason").find("protocol 1, node 0 protocol 2") != std::string::npos);
  CHECK(gathered.get().find("node 1 never arrived") != std::string::npos);
}

TEST_CASE("rendezvous: the handshake room grows with the job, within bounds") {
  CHECK(max_pending_connections(2) == 16);
  CHECK(max_pending_connections(100) == 400);
  CHECK(max_pending_connections(100000) == 4096);
}
