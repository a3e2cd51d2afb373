#pragma once
// Local servers for the tests of the real transports: cpp-httplib for HTTP and HTTPS
// (certificates made with openssl at test time), and raw sockets for answers that
// no well-behaved server gives (a connection closed in the middle, ...).
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ktrain::net::testing {

namespace fs = std::filesystem;

/// A server running on its own thread for the life of the object.
template <typename Server>
struct Running {
  Server& server;
  int port = 0;
  std::thread thread;
  explicit Running(Server& s) : server(s) {
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Running() {
    server.stop();
    thread.join();
  }
  std::string url(const std::string& scheme, const std::string& path) const {
    return scheme + "://127.0.0.1:" + std::to_string(port) + path;
  }
};

inline void routes(httplib::Server& s) {
  s.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Test", "yes");
    res.set_content("hello world", "text/plain");
  });
  s.Get("/stream", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 5; ++i) {
        std::string line = "line " + std::to_string(i) + "\n";
        sink.write(line.data(), line.size());
      }
      sink.done();
      return true;
    });
  });
  s.Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1 << 20, 'x'), "application/octet-stream");
  });
  s.Put("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.method + " " + std::to_string(req.body.size()) + " " + req.body,
                    "text/plain");
  });
  s.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.method + " " + std::to_string(req.body.size()) + " " + req.body,
                    "text/plain");
  });
  s.Delete("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.status = 202;
    res.set_content(req.method, "text/plain");
  });
  s.Get("/auth", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.get_header_value("Authorization"), "text/plain");
  });
  s.Patch("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.method + " " + std::to_string(req.body.size()) + " " + req.body,
                    "text/plain");
  });
  // The client's port: which connection a request came on.
  s.Get("/port", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(std::to_string(req.remote_port), "text/plain");
  });
  s.Get("/close-port", [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Connection", "close");
    res.set_content(std::to_string(req.remote_port), "text/plain");
  });
  s.Get(R"(/n/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.matches[1].str(), "text/plain");
  });
}

/// A port on 127.0.0.1 where nothing listens.
inline int closed_port() {
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

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// A self-signed certificate for `san` in a temporary folder.
struct Cert {
  fs::path dir;
  std::string pem;
  explicit Cert(const std::string& san) {
    dir = fs::temp_directory_path() /
          ("ktrain-net-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
    fs::create_directories(dir);
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=ktrain-test -addext subjectAltName=" +
        san + " -keyout " + (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() +
        " >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    pem = slurp(dir / "cert.pem");
  }
  ~Cert() { fs::remove_all(dir); }
  std::string cert() const { return (dir / "cert.pem").string(); }
  std::string key() const { return (dir / "key.pem").string(); }
};

/// A socket listening on 127.0.0.1, on a free port (put in `port`).
inline int listen_local(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

/// A server on a raw socket that accepts one connection per function of `serves`,
/// one after another, on a thread of its own, and hands each to its function after
/// reading the first request; the connection is closed when the function returns.
struct RawServer {
  int fd = -1;
  int port = 0;
  std::thread thread;
  explicit RawServer(std::function<void(int)> serve)
      : RawServer(std::vector<std::function<void(int)>>{std::move(serve)}) {}
  explicit RawServer(std::vector<std::function<void(int)>> serves) {
    fd = listen_local(port);
    thread = std::thread([this, serves = std::move(serves)] {
      for (const auto& serve : serves) {
        int c = ::accept(fd, nullptr, nullptr);
        if (c < 0) return;
        char buf[4096];
        [[maybe_unused]] auto n = ::read(c, buf, sizeof buf);  // the request
        serve(c);
        ::close(c);
      }
    });
  }
  ~RawServer() {
    thread.join();
    ::close(fd);
  }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }
};

/// Writes all of `text` to the socket `fd`.
inline void send_text(int fd, const std::string& text) {
  [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
}

}  // namespace ktrain::net::testing
