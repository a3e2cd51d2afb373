#include "net/websocket.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "net/tunnel.h"

namespace ktrain::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

using Socket = asio::local::stream_protocol::socket;

/// Received messages that may wait for receive() before reading pauses.
constexpr std::size_t kInboxCap = std::size_t{16} << 20;

/// "host:port" and "/path?query" of a URL.
std::pair<std::string, std::string> host_and_target(const std::string& url) {
  const auto scheme_end = url.find("://");
  const std::size_t start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const auto slash = url.find('/', start);
  if (slash == std::string::npos) return {url.substr(start), "/"};
  return {url.substr(start, slash - start), url.substr(slash)};
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

struct WebSocket::Impl {
  std::unique_ptr<Tunnel> tunnel;
  std::string host;
  asio::io_context ioc;
  websocket::stream<Socket> ws{ioc};
  std::thread io;
  std::string protocol;
  beast::flat_buffer rbuf;
  std::deque<std::string> outbox;  // io thread only
  bool writing = false;            // io thread only
  bool close_pending = false;      // io thread only: close once the outbox is sent

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> inbox;
  std::size_t inbox_bytes = 0;
  bool read_paused = false;  // the inbox is full: reading waits for receive()
  bool closed = false;
  bool close_asked = false;
  std::string error;

  ~Impl() {
    ioc.stop();
    if (io.joinable()) io.join();
  }

  void finish(const beast::error_code& ec) {
    std::lock_guard<std::mutex> lock(mu);
    if (closed) return;
    closed = true;
    if (ec && ec != websocket::error::closed && !close_asked) {
      error = tunnel->failure();
      if (error.empty()) {
        error =
            "the connection to " + host + " ended without a WebSocket close (" + ec.message() + ")";
      }
    }
    cv.notify_all();
  }

  void read_next() {
    ws.async_read(rbuf, [this](beast::error_code ec, std::size_t) {
      if (ec) {
        finish(ec);
        return;
      }
      bool pause = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        inbox_bytes += rbuf.size();
        inbox.push_back(beast::buffers_to_string(rbuf.data()));
        // A reader slower than the server: TCP holds the server back, not memory.
        pause = read_paused = inbox_bytes >= kInboxCap;
        cv.notify_all();
      }
      rbuf.consume(rbuf.size());
      if (!pause) read_next();
    });
  }
  /// Reading again after a pause (io thread).
  void resume_reading() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!read_paused || closed) return;
      read_paused = false;
    }
    read_next();
  }

  void write_next() {
    if (writing) return;
    if (outbox.empty()) {
      if (close_pending) {
        close_pending = false;
        writing = true;
        // The read loop ends with `closed` once the server's close arrives.
        ws.async_close(websocket::close_code::normal,
                       [this](beast::error_code) { writing = false; });
      }
      return;
    }
    writing = true;
    ws.async_write(asio::buffer(outbox.front()), [this](beast::error_code ec, std::size_t) {
      writing = false;
      outbox.pop_front();
      if (ec) {
        outbox.clear();
        finish(ec);
        return;
      }
      write_next();
    });
  }
};

WebSocket::WebSocket(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebSocket::~WebSocket() = default;

std::unique_ptr<WebSocket> WebSocket::open(const Request& req,
                                           const std::vector<std::string>& protocols) {
  if (auto problem = request_problem(req); !problem.empty()) {
    throw TransportError("the request to " + redact_url(req.url) + " was not sent: " + problem,
                         TransportFailure::kNotSent);
  }
  auto impl = std::make_unique<Impl>();
  impl->tunnel = Tunnel::open(req);
  auto [host, target] = host_and_target(req.url);
  impl->host = host;
  impl->ws.next_layer().assign(asio::local::stream_protocol(), impl->tunnel->take_local_fd());
  impl->ws.set_option(websocket::stream_base::decorator(
      [headers = req.headers, offered = join(protocols)](websocket::request_type& r) {
        r.set(http::field::user_agent, "ktrain/" KTRAIN_VERSION);
        for (const auto& [name, value] : headers) r.set(name, value);
        if (!offered.empty()) r.set(http::field::sec_websocket_protocol, offered);
      }));
  websocket::response_type res;
  beast::error_code ec;
  bool done = false;
  impl->ws.async_handshake(res, host, target, [&](beast::error_code e) {
    ec = e;
    done = true;
  });
  impl->ioc.run_for(req.connect_timeout * 2);
  if (!done) {
    beast::error_code ignored;
    impl->ws.next_layer().close(ignored);
    impl->ioc.restart();
    impl->ioc.run();
    throw TransportError("timed out waiting for " + host + " to answer the upgrade to a stream",
                         TransportFailure::kTimeout);
  }
  if (ec == websocket::error::upgrade_declined) {
    throw UpgradeRefused(host + " refused the stream: HTTP " + std::to_string(res.result_int()) +
                             " " + std::string(res.reason()),
                         static_cast<int>(res.result_int()), res.body());
  }
  if (ec) {
    std::string why = impl->tunnel->failure();
    if (why.empty()) why = "the upgrade to a stream failed: " + ec.message();
    throw TransportError(why, TransportFailure::kDropped);
  }
  impl->protocol = std::string(res[http::field::sec_websocket_protocol]);
  impl->ioc.restart();
  impl->ws.binary(true);
  impl->ws.read_message_max(64u << 20);
  Impl* raw = impl.get();
  asio::post(impl->ioc, [raw] { raw->read_next(); });
  impl->io = std::thread([raw] {
    // Keep running until stopped, also while nothing is queued.
    auto guard = asio::make_work_guard(raw->ioc);
    raw->ioc.run();
  });
  return std::unique_ptr<WebSocket>(new WebSocket(std::move(impl)));
}

const std::string& WebSocket::protocol() const {
  return impl_->protocol;
}

bool WebSocket::send(std::string message) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return false;
  }
  Impl* raw = impl_.get();
  asio::post(impl_->ioc, [raw, m = std::move(message)]() mutable {
    raw->outbox.push_back(std::move(m));
    raw->write_next();
  });
  return true;
}

bool WebSocket::receive(std::string& message) {
  bool timed_out = false;
  return receive(message, std::chrono::steady_clock::time_point::max(), timed_out);
}

bool WebSocket::receive(std::string& message, std::chrono::steady_clock::time_point deadline,
                        bool& timed_out) {
  timed_out = false;
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto ready = [&] { return !impl_->inbox.empty() || impl_->closed; };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    impl_->cv.wait(lock, ready);
  } else if (!impl_->cv.wait_until(lock, deadline, ready)) {
    timed_out = true;
    return false;
  }
  if (impl_->inbox.empty()) return false;
  message = std::move(impl_->inbox.front());
  impl_->inbox.pop_front();
  impl_->inbox_bytes -= message.size();
  if (impl_->read_paused && impl_->inbox_bytes < kInboxCap / 2) {
    Impl* raw = impl_.get();
    asio::post(impl_->ioc, [raw] { raw->resume_reading(); });
  }
  return true;
}

void WebSocket::close() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return;
    impl_->close_asked = true;
  }
  Impl* raw = impl_.get();
  asio::post(impl_->ioc, [raw] {
    raw->close_pending = true;
    raw->write_next();
    raw->resume_reading();  // the server's close comes by reading
  });
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->cv.wait_for(lock, std::chrono::seconds(1), [&] { return impl_->closed; })) return;
  // No close from the server within a second (it is gone, or hangs): the connection is
  // dropped, so that a receive() waiting on it returns.
  lock.unlock();
  asio::post(impl_->ioc, [raw] {
    beast::error_code ec;
    raw->ws.next_layer().close(ec);
  });
  lock.lock();
  impl_->cv.wait_for(lock, std::chrono::seconds(1), [&] { return impl_->closed; });
  impl_->closed = true;
  impl_->cv.notify_all();
}

std::string WebSocket::error() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->error;
}

}  // namespace ktrain::net
