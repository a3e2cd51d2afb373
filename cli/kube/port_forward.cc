#include "kube/port_forward.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <thread>

#include "base/error.h"
#include "kube/fd_util.h"
#include "kube/streams.h"
#include "net/spdy.h"
#include "net/websocket.h"

namespace ktrain::kube {

namespace spdy = net::spdy;

namespace {

/// Bytes from the pod that may wait for a slow local client before the tunnel stops
/// reading (and so every connection in it waits: SPDY here has no flow control).
constexpr std::size_t kQueueCap = std::size_t{8} << 20;
/// How long the pod's side may take to accept a connection's streams (kubectl's).
constexpr auto kReplyTimeout = std::chrono::seconds(30);
/// Pings keep an idle tunnel open through the kubelet's idle timeout and proxies.
constexpr auto kPingPeriod = std::chrono::seconds(10);
/// After the data, how long the error stream may take to end.
constexpr auto kErrorStreamWait = std::chrono::seconds(5);

std::string api_path(const std::string& ns, const std::string& pod) {
  return object_path(resource_type("v1", "Pod"), ns, pod, "portforward");
}

}  // namespace

/// One local connection: its two streams' state, filled by the tunnel's reader.
struct Conn {
  std::uint32_t error_id = 0, data_id = 0;
  int replies = 0;  // SYN_REPLY frames seen (2: both streams accepted)
  bool reset = false;
  std::deque<std::string> in;  // from the pod, for the local socket
  std::size_t queued = 0;
  bool remote_fin = false;
  std::string error_text;
  bool error_done = false;
  bool gone = false;  // forward() is done with it
  StopPipe wake;
};

struct PortForwarder::Tunnel {
  std::unique_ptr<net::WebSocket> ws;
  std::mutex mu;  // everything below; held while a header block is encoded and sent
  std::condition_variable cv;
  spdy::HeaderDeflater deflater;
  std::uint32_t next_id = 1;  // a client's streams are odd
  int next_request = 0;
  std::map<std::uint32_t, std::shared_ptr<Conn>> streams;
  bool ended = false;
  bool asked = false;  // ended by close(): no error to report
  std::string why;     // why it ended, when not asked to
  std::thread reader, pinger;

  ~Tunnel() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ended = true;
    }
    cv.notify_all();
    if (ws) ws->close();
    if (reader.joinable()) reader.join();
    if (pinger.joinable()) pinger.join();
  }

  bool alive() {
    std::lock_guard<std::mutex> lock(mu);
    return !ended;
  }

  void end(const std::string& reason, bool by_request = false) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!ended && why.empty()) why = reason;
      if (!ended) asked = by_request;
      ended = true;
      for (auto& [id, c] : streams) c->wake.signal();
    }
    cv.notify_all();
  }

  /// Why the tunnel ended, "" when close() ended it (caller holds mu).
  std::string ended_why() const { return asked ? std::string() : why; }

  void read_loop() {
    spdy::FrameReader frames;
    spdy::HeaderInflater inflater;  // this thread's alone
    std::string msg;
    try {
      while (ws->receive(msg)) {
        frames.feed(msg);
        while (auto f = frames.next()) handle(*f, inflater);
      }
      const std::string err = ws->error();
      end(err.empty() ? "the API server closed the port-forward connection" : err);
    } catch (const spdy::ProtocolError& e) {
      end(std::string("the API server's port-forward stream is not valid SPDY/3.1: ") + e.what());
      ws->close();
    }
  }

  void handle(spdy::Frame& f, spdy::HeaderInflater& inflater) {
    if (!f.control) {
      std::unique_lock<std::mutex> lock(mu);
      auto it = streams.find(f.stream_id);
      if (it == streams.end()) return;  // a stream already done with
      std::shared_ptr<Conn> c = it->second;
      if (f.stream_id == c->error_id) {
        c->error_text += f.payload;
        if (f.flags & spdy::kFlagFin) c->error_done = true;
      } else {
        // A slow local client holds the tunnel back rather than the memory growing.
        cv.wait(lock, [&] { return c->queued < kQueueCap || c->gone || ended; });
        if (!f.payload.empty() && !c->gone) {
          c->queued += f.payload.size();
          c->in.push_back(std::move(f.payload));
        }
        if (f.flags & spdy::kFlagFin) c->remote_fin = true;
      }
      c->wake.signal();
      return;
    }
    switch (f.type) {
      case spdy::kSynReply:
      case spdy::kHeaders: {
        inflater.decode(spdy::reply_block(f));  // the zlib stream goes on, whatever it says
        if (f.type != spdy::kSynReply) break;
        std::lock_guard<std::mutex> lock(mu);
        auto it = streams.find(f.stream_id);
        if (it == streams.end()) break;
        ++it->second->replies;
        if (f.flags & spdy::kFlagFin) {
          if (f.stream_id == it->second->error_id) it->second->error_done = true;
          if (f.stream_id == it->second->data_id) it->second->remote_fin = true;
        }
        it->second->wake.signal();
        break;
      }
      case spdy::kSynStream: {
        inflater.decode(spdy::syn_stream_block(f));
        ws->send(spdy::rst_stream(f.stream_id, spdy::kRstRefusedStream));  // none expected
        break;
      }
      case spdy::kRstStream: {
        std::lock_guard<std::mutex> lock(mu);
        auto it = streams.find(f.stream_id);
        if (it == streams.end()) break;
        it->second->reset = true;
        it->second->wake.signal();
        break;
      }
      case spdy::kPing:
        if (f.word(0) % 2 == 0) ws->send(spdy::ping(f.word(0)));  // the server's: answer
        break;
      case spdy::kGoAway:
        end("the API server ended the port-forward connection");
        break;
      default:
        break;  // SETTINGS, WINDOW_UPDATE
    }
  }

  void ping_loop() {
    std::uint32_t id = 1;
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, kPingPeriod, [&] { return ended; })) {
      ws->send(spdy::ping(id));
      id += 2;
    }
  }

  /// Opens a connection's two streams, as kubectl does: the error stream (closed at
  /// once from this side: nothing is written to it), then the data stream.
  std::shared_ptr<Conn> open(int port) {
    auto c = std::make_shared<Conn>();
    std::lock_guard<std::mutex> lock(mu);
    if (ended) return nullptr;
    c->error_id = next_id;
    c->data_id = next_id + 2;
    next_id += 4;
    const std::string request = std::to_string(next_request++);
    streams[c->error_id] = c;
    streams[c->data_id] = c;
    const std::string p = std::to_string(port);
    ws->send(spdy::syn_stream(
        c->error_id,
        deflater.encode({{"streamtype", "error"}, {"port", p}, {"requestid", request}}), false));
    ws->send(spdy::data_frame(c->error_id, "", true));
    ws->send(spdy::syn_stream(
        c->data_id, deflater.encode({{"streamtype", "data"}, {"port", p}, {"requestid", request}}),
        false));
    return c;
  }

  void forget(const std::shared_ptr<Conn>& c) {
    {
      std::lock_guard<std::mutex> lock(mu);
      c->gone = true;
      streams.erase(c->error_id);
      streams.erase(c->data_id);
    }
    cv.notify_all();
  }

  std::string relay(int port, int fd) {
    std::shared_ptr<Conn> c = open(port);
    if (!c) {
      std::lock_guard<std::mutex> lock(mu);
      return ended_why();
    }
    struct Forget {
      Tunnel* t;
      std::shared_ptr<Conn>& c;
      ~Forget() { t->forget(c); }
    } forget_at_end{this, c};

    // Both streams accepted, or why not.
    const auto deadline = std::chrono::steady_clock::now() + kReplyTimeout;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (c->reset || ended) {
          return !c->error_text.empty() ? c->error_text
                 : ended                ? ended_why()
                                        : "the pod's side refused the connection";
        }
        if (c->replies >= 2) break;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ws->send(spdy::rst_stream(c->data_id, spdy::kRstCancel));
        return "the pod's side did not accept the connection within 30s";
      }
      pollfd p{c->wake.fds[0], POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left.count()));
      c->wake.drain();
    }

    bool local_eof = false, broken = false;
    char buf[32 * 1024];
    while (true) {
      // What the reader left for this connection, then a wait for more: the pipe is
      // emptied first, so no wake-up is lost between the two.
      c->wake.drain();
      std::deque<std::string> chunks;
      bool fin = false, stop = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        chunks.swap(c->in);
        c->queued = 0;
        fin = c->remote_fin;
        stop = c->reset || ended;
      }
      cv.notify_all();
      for (const auto& chunk : chunks) {
        if (!write_all(fd, chunk.data(), chunk.size())) {
          broken = true;
          break;
        }
      }
      if (broken || stop) break;
      if (fin) {
        ::shutdown(fd, SHUT_WR);  // the pod's side is done: so is the local one
        break;
      }
      // Once the local side is done sending, only the pod's side is waited for (a
      // negative descriptor is left out by poll, with its POLLHUP).
      pollfd p[2] = {{c->wake.fds[0], POLLIN, 0}, {local_eof ? -1 : fd, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (!p[1].revents) continue;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        ws->send(spdy::data_frame(c->data_id, std::string_view(buf, static_cast<std::size_t>(n)),
                                  false));
      } else {
        // The local client is done sending (or gone): the pod's side is told, and what it
        // still sends comes back.
        local_eof = true;
        ws->send(spdy::data_frame(c->data_id, "", true));
        if (n < 0) broken = true;
      }
      if (broken) break;
    }
    // As kubectl: what the local side did not finish is cut (RST), then the error
    // stream's words, if any, say why the pod's side ended.
    if (!local_eof || broken) ws->send(spdy::rst_stream(c->data_id, spdy::kRstCancel));
    const auto until = std::chrono::steady_clock::now() + kErrorStreamWait;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!c->error_text.empty() && (c->error_done || c->reset || ended)) return c->error_text;
        if (c->error_done || c->reset) return "";
        if (ended) return ended_why();
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{c->wake.fds[0], POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left.count()));
      c->wake.drain();
    }
  }
};

PortForwarder::PortForwarder(Client& client, std::string ns, std::string pod,
                             std::function<void(const std::string&)> log)
    : client_(client), ns_(std::move(ns)), pod_(std::move(pod)), log_(std::move(log)) {}

PortForwarder::~PortForwarder() = default;

std::string PortForwarder::protocol() const {
  std::lock_guard<std::mutex> lock(mu_);
  return protocol_;
}

std::shared_ptr<PortForwarder::Tunnel> PortForwarder::tunnel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) throw Error("port-forward stopped");
  if (protocol_ == kPortForwardProtocol) return nullptr;
  if (tunnel_ && tunnel_->alive()) return tunnel_;
  const bool again = tunnel_ != nullptr;
  std::unique_ptr<net::WebSocket> ws;
  try {
    ws = client_.open_stream(api_path(ns_, pod_), {}, {kPortForwardTunnelProtocol});
  } catch (const ApiError& e) {
    // 400: the subprotocol is not served (before 1.30, or the PortForwardWebsockets
    // feature off): one WebSocket per connection, in the kubelet's protocol.
    if (e.http_status() != 400 || again) throw;
    if (log_)
      log_(std::string("the API server does not tunnel SPDY (") + e.what() + "): using " +
           kPortForwardProtocol + ", one WebSocket per connection");
    protocol_ = kPortForwardProtocol;
    return nullptr;
  }
  if (ws->protocol() != kPortForwardTunnelProtocol) {
    if (again)
      throw Error("the API server no longer speaks " + std::string(kPortForwardTunnelProtocol));
    if (log_)
      log_("the API server chose \"" + ws->protocol() + "\": using " + kPortForwardProtocol);
    ws->close();
    protocol_ = kPortForwardProtocol;
    return nullptr;
  }
  if (log_) {
    log_(again ? "the port-forward connection ended (" + tunnel_->why + "): opened it again"
               : std::string("using ") + kPortForwardTunnelProtocol +
                     ": every connection in one WebSocket");
  }
  auto t = std::make_shared<Tunnel>();
  t->ws = std::move(ws);
  Tunnel* raw = t.get();
  t->reader = std::thread([raw] { raw->read_loop(); });
  t->pinger = std::thread([raw] { raw->ping_loop(); });
  protocol_ = kPortForwardTunnelProtocol;
  tunnel_ = t;
  return t;
}

void PortForwarder::connect() {
  tunnel();
}

void PortForwarder::close() {
  std::shared_ptr<Tunnel> t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = tunnel_;
    closed_ = true;
  }
  if (t) {
    t->end("port-forward stopped", true);
    t->ws->close();
  }
}

std::string PortForwarder::forward(int port, int fd) {
  std::shared_ptr<Tunnel> t = tunnel();
  if (!t) return forward_connection(client_, ns_, pod_, port, fd);
  return t->relay(port, fd);
}

}  // namespace ktrain::kube
