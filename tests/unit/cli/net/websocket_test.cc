// net::WebSocket against a local server of raw sockets: a receive with a deadline ends
// when nothing comes by then, and still takes a message that comes before it; exec gives
// up on a command that does not end within its timeout.
#include "net/websocket.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "../kube/kube_fakes.h"
#include "kube/client.h"
#include "kube/streams.h"
#include "test_servers.h"

using namespace ktrain::net;

namespace {

/// RFC 6455's Sec-WebSocket-Accept for `key`.
std::string accept_for(const std::string& key) {
  const std::string text = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char out[64] = {};
  const int n = EVP_EncodeBlock(out, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n));
}

/// One WebSocket connection, served on a thread: the upgrade (agreeing to `protocol`
/// when not empty), then a binary "hi" when told to (send_hi) or nothing (quiet), until
/// the client closes.
struct QuietServer {
  int fd = -1;
  int port = 0;
  std::string protocol;
  std::mutex mu;
  std::condition_variable cv;
  bool told = false;
  bool send = false;
  std::thread thread;

  explicit QuietServer(std::string proto = "") : protocol(std::move(proto)) {
    fd = ktrain::net::testing::listen_local(port);
    thread = std::thread([this] { serve(); });
  }
  ~QuietServer() {
    {
      std::lock_guard<std::mutex> lk(mu);
      told = true;  // quiet, unless told otherwise already
    }
    cv.notify_all();
    thread.join();
    ::close(fd);
  }
  void serve() {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    const std::string field = "Sec-WebSocket-Key: ";
    const auto at = req.find(field);
    const std::string key =
        at == std::string::npos
            ? ""
            : req.substr(at + field.size(), req.find("\r\n", at) - at - field.size());
    const std::string answer =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        accept_for(key) + "\r\n" +
        (protocol.empty() ? "" : "Sec-WebSocket-Protocol: " + protocol + "\r\n") + "\r\n";
    [[maybe_unused]] auto w = ::write(c, answer.data(), answer.size());
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [this] { return told; });
    }
    if (send) {
      const char frame[] = {static_cast<char>(0x82), 2, 'h', 'i'};  // FIN, binary, "hi"
      w = ::write(c, frame, sizeof frame);
    }
    // Until the client's close (or the connection's end).
    while (::read(c, buf, sizeof buf) > 0) {
    }
    ::close(c);
  }
  void tell(bool send_hi) {
    std::lock_guard<std::mutex> lk(mu);
    told = true;
    send = send_hi;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("websocket: a receive with a deadline gives up then; a message before it comes") {
  QuietServer srv;
  Request req;
  req.url = "http://127.0.0.1:" + std::to_string(srv.port) + "/exec";
  auto ws = WebSocket::open(req, {});
  std::string msg;
  bool timed_out = false;
  const auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
  CHECK_FALSE(ws->receive(msg, soon, timed_out));
  CHECK(timed_out);
  CHECK(std::chrono::steady_clock::now() >= soon);
  CHECK(ws->error().empty());  // the connection is still open
  srv.tell(true);
  CHECK(ws->receive(msg, std::chrono::steady_clock::now() + std::chrono::seconds(30), timed_out));
  CHECK_FALSE(timed_out);
  CHECK(msg == "hi");
  ws->close();
}

TEST_CASE("exec: a command that does not end within its timeout is given up, exit 3") {
  QuietServer srv(ktrain::kube::kExecProtocol);
  ktrain::kube_test::TestEnv t;
  ktrain::kube_test::FakeProcessRunner runner;
  ktrain::kube_test::FakeTransport tr;
  auto config = ktrain::kube_test::token_config();
  config.cluster.server = "http://127.0.0.1:" + std::to_string(srv.port);
  ktrain::kube::Client client(config, tr, t.env, runner);
  ktrain::kube::ExecRequest req;
  req.ns = "ml";
  req.pod = "r-0";
  req.command = {"/opt/ktrain/bin/ktrain-launch", "--latest-checkpoint"};
  req.timeout = std::chrono::milliseconds(150);
  try {
    ktrain::kube::exec(client, req);
    FAIL("exec returned although the command never ended");
  } catch (const ktrain::Error& e) {
    CHECK(e.exit_status() == 3);
    CHECK(std::string(e.what()) == "the command in pod r-0 did not end within 0.15 s");
  }
}
