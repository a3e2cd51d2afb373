#include "kube/streams.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "kube/fd_util.h"

namespace ktrain::kube {

namespace {

// v5.channel.k8s.io channels: each message starts with its channel's number.
constexpr char kStdin = 0;
constexpr char kStdout = 1;
constexpr char kStderr = 2;
constexpr char kError = 3;
constexpr char kResize = 4;
constexpr unsigned char kClose = 255;  ///< v5: [255, channel] ends that channel

const ResourceType& pods() {
  static const ResourceType t{"v1", "Pod", "pods", true};
  return t;
}

std::string resize_message(const TermSize& s) {
  nlohmann::json j = {{"Width", s.width}, {"Height", s.height}};
  return std::string(1, kResize) + j.dump();
}

std::string server_version(Client& client) {
  try {
    return client.get("/version").value("gitVersion", "");
  } catch (const Error&) {
    return "";
  }
}

[[noreturn]] void throw_old_server(Client& client) {
  const std::string v = server_version(client);
  throw Error("exec needs the " + std::string(kExecProtocol) +
              " protocol of Kubernetes 1.30 or newer" +
              (v.empty() ? std::string(", which this API server does not speak")
                         : "; the API server is " + v) +
              " (kubectl exec speaks the older SPDY protocol)");
}

}  // namespace

std::optional<int> exec_status_code(const nlohmann::json& status, std::string& message) {
  message.clear();
  if (!status.is_object()) {
    message = "the exit status sent by the server is not a Status object";
    return std::nullopt;
  }
  const std::string s = status.value("status", "");
  if (s == "Success") return 0;
  message = status.value("message", "");
  if (status.value("reason", "") == "NonZeroExitCode") {
    const auto& causes = status.contains("details") && status["details"].is_object()
                             ? status["details"].value("causes", nlohmann::json::array())
                             : nlohmann::json::array();
    for (const auto& c : causes) {
      if (!c.is_object() || c.value("reason", "") != "ExitCode") continue;
      const std::string code = c.value("message", "");
      char* end = nullptr;
      long v = std::strtol(code.c_str(), &end, 10);
      if (!code.empty() && end && *end == '\0' && v >= 0 && v <= 255) {
        message.clear();
        return static_cast<int>(v);
      }
    }
  }
  if (message.empty()) message = "the command failed (status " + s + ")";
  return std::nullopt;
}

ExecResult exec(Client& client, const ExecRequest& req) {
  Query q;
  for (const auto& arg : req.command) q.emplace_back("command", arg);
  if (!req.container.empty()) q.emplace_back("container", req.container);
  q.emplace_back("stdin", req.stdin ? "true" : "false");
  q.emplace_back("stdout", "true");
  q.emplace_back("stderr", req.tty ? "false" : "true");  // a terminal has one output stream
  q.emplace_back("tty", req.tty ? "true" : "false");
  std::unique_ptr<net::WebSocket> ws;
  try {
    ws = client.open_stream(object_path(pods(), req.ns, req.pod, "exec"), q, {kExecProtocol});
  } catch (const ApiError& e) {
    // Before 1.30 the kubelet answers the upgrade itself and names the protocols it knows.
    const std::string what = e.what();
    if (e.http_status() == 400 && what.find("protocol") != std::string::npos) {
      throw_old_server(client);
    }
    throw;
  }
  if (ws->protocol() != kExecProtocol) throw_old_server(client);

  if (req.tty && req.term_size) {
    if (auto size = req.term_size()) ws->send(resize_message(*size));
  }
  StopPipe stop;
  std::thread input;
  if (req.stdin || (req.tty && req.resize_fd >= 0)) {
    input = std::thread([&] {
      bool stdin_open = req.stdin;
      char buf[32 * 1024];
      buf[0] = kStdin;
      while (true) {
        pollfd p[3] = {{stop.fds[0], POLLIN, 0},
                       {stdin_open ? req.in_fd : -1, POLLIN, 0},
                       {req.tty ? req.resize_fd : -1, POLLIN, 0}};
        if (::poll(p, 3, -1) < 0) {
          if (errno == EINTR) continue;
          return;
        }
        if (p[0].revents) return;
        if (p[2].revents & POLLIN) {
          char drain[64];
          [[maybe_unused]] auto n = ::read(req.resize_fd, drain, sizeof drain);
          if (req.term_size) {
            if (auto size = req.term_size()) ws->send(resize_message(*size));
          }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t n = ::read(req.in_fd, buf + 1, sizeof buf - 1);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          if (n <= 0) {
            // The end of stdin: v5 says so, and the command sees its input end.
            ws->send(std::string{static_cast<char>(kClose), kStdin});
            stdin_open = false;
            if (!(req.tty && req.resize_fd >= 0)) return;
            continue;
          }
          if (!ws->send(std::string(buf, static_cast<std::size_t>(n) + 1))) return;
        }
      }
    });
  }
  std::string status_text;
  bool got_status = false;
  std::string msg;
  const auto deadline = req.timeout.count() > 0 ? std::chrono::steady_clock::now() + req.timeout
                                                : std::chrono::steady_clock::time_point::max();
  bool timed_out = false;
  while (ws->receive(msg, deadline, timed_out)) {
    if (msg.empty()) continue;
    const char channel = msg[0];
    const char* data = msg.data() + 1;
    const std::size_t size = msg.size() - 1;
    if (channel == kStdout) {
      write_all(req.out_fd, data, size);
    } else if (channel == kStderr) {
      write_all(req.err_fd, data, size);
    } else if (channel == kError) {
      // The command's end: everything it wrote came before.
      status_text.append(data, size);
      got_status = true;
      break;
    }
  }
  stop.signal();
  if (input.joinable()) input.join();
  if (timed_out) {
    ws->close();
    throw Error("the command in pod " + req.pod + " did not end within " +
                    fmt::format("{:g}", static_cast<double>(req.timeout.count()) / 1000) + " s",
                exit_code::kUnreachable);
  }
  if (!got_status) {
    std::string why = ws->error();
    throw Error("the stream to pod " + req.pod + " ended before the command's exit status arrived" +
                    (why.empty() ? std::string() : ": " + why),
                exit_code::kUnreachable);
  }
  ExecResult result;
  nlohmann::json status;
  try {
    status = nlohmann::json::parse(status_text);
  } catch (const nlohmann::json::exception&) {
    result.exit_code = 1;
    result.message = "the server sent an exit status that is not JSON: " + status_text;
    return result;
  }
  if (auto code = exec_status_code(status, result.message)) {
    result.exit_code = *code;
  } else {
    result.exit_code = 1;
  }
  return result;
}

std::string forward_connection(Client& client, const std::string& ns, const std::string& pod,
                               int port, int fd) {
  auto ws = client.open_stream(object_path(pods(), ns, pod, "portforward"),
                               {{"ports", std::to_string(port)}}, {kPortForwardProtocol});
  if (ws->protocol() != kPortForwardProtocol) {
    throw Error("the API server does not speak " + std::string(kPortForwardProtocol) +
                " for port-forward" +
                (ws->protocol().empty() ? std::string() : " (it chose " + ws->protocol() + ")"));
  }
  StopPipe stop;
  std::atomic<bool> local_done{false};
  std::thread input([&] {
    char buf[32 * 1024];
    buf[0] = 0;  // the data channel of the first (only) port
    while (true) {
      pollfd p[2] = {{stop.fds[0], POLLIN, 0}, {fd, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (p[0].revents) return;
      ssize_t n = ::recv(fd, buf + 1, sizeof buf - 1, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      if (!ws->send(std::string(buf, static_cast<std::size_t>(n) + 1))) return;
    }
    // The local side closed: there is no half-close in this protocol, so the stream ends.
    local_done = true;
    ws->close();
  });
  // Each channel's first message is its port (2 bytes, little-endian).
  bool data_seen = false, error_seen = false;
  std::string error_text;
  std::string msg;
  while (ws->receive(msg)) {
    if (msg.empty()) continue;
    const int channel = static_cast<unsigned char>(msg[0]);
    std::string_view body(msg.data() + 1, msg.size() - 1);
    if (channel == 0) {
      if (!data_seen) {
        data_seen = true;
        body.remove_prefix(std::min<std::size_t>(2, body.size()));
      }
      if (!body.empty() && !write_all(fd, body.data(), body.size())) break;
    } else if (channel == 1) {
      if (!error_seen) {
        error_seen = true;
        body.remove_prefix(std::min<std::size_t>(2, body.size()));
      }
      error_text.append(body);
    }
  }
  ::shutdown(fd, SHUT_WR);
  stop.signal();
  input.join();
  if (!error_text.empty()) return error_text;
  if (!local_done) {
    std::string why = ws->error();
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace ktrain::kube
