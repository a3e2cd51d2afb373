#include "runtime/peer_link.h"

#include "runtime/error.h"

namespace ktrain::launch {

ServerLink::ServerLink(std::vector<Connection>& peers) : peers_(peers), done_(peers.size(), false) {
  if (!done_.empty()) done_[0] = true;
}

std::vector<int> ServerLink::fds() const {
  std::vector<int> out;
  for (const auto& c : peers_) {
    if (c.is_open()) out.push_back(c.fd());
  }
  return out;
}

void ServerLink::stop_all(const std::string& cause, size_t except) {
  Message m;
  m.type = "stop";
  m.set("cause", cause);
  for (size_t r = 1; r < peers_.size(); ++r) {
    if (r != except && peers_[r].is_open() && !done_[r]) peers_[r].send(m, 2000);
  }
}

std::optional<std::string> ServerLink::on_readable(int fd) {
  for (size_t r = 1; r < peers_.size(); ++r) {
    Connection& c = peers_[r];
    if (c.fd() != fd) continue;
    bool open = c.read_available();
    Message m;
    std::optional<std::string> cause;
    try {
      while (c.take(m)) {
        if (m.type == "done") done_[r] = true;
        if (m.type == "failed" && !cause) cause = m.get("cause");
      }
    } catch (const LaunchError& e) {
      // Malformed, or not sealed by node r: nothing more from it is believed.
      if (!cause) cause = "lost the connection to node " + std::to_string(r) + ": " + e.what();
      open = false;
    }
    if (!open) {
      c.close();
      if (!done_[r] && !cause) cause = "lost the connection to node " + std::to_string(r);
      done_[r] = true;
    }
    if (cause) {
      done_[r] = true;
      stop_all(*cause, r);
      return cause;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

void ServerLink::local_failed(const std::string& cause) {
  stop_all(cause, 0);
}

bool ServerLink::all_done() const {
  if (!self_done_) return false;
  for (bool d : done_) {
    if (!d) return false;
  }
  return true;
}

std::vector<int> ClientLink::fds() const {
  if (conn_.is_open()) return {conn_.fd()};
  return {};
}

std::optional<std::string> ClientLink::on_readable(int) {
  bool open = conn_.read_available();
  Message m;
  try {
    while (conn_.take(m)) {
      if (m.type == "stop") return m.get("cause");
    }
  } catch (const LaunchError& e) {
    // Malformed, or not sealed by node 0: nothing more from it is believed.
    conn_.close();
    return std::string("lost the connection to node 0: ") + e.what();
  }
  if (!open) {
    conn_.close();
    if (!done_) return std::string("lost the connection to node 0");
  }
  return std::nullopt;
}

void ClientLink::local_failed(const std::string& cause) {
  Message m;
  m.type = "failed";
  m.set("cause", cause);
  conn_.send(m, 2000);
}

void ClientLink::local_done() {
  Message m;
  m.type = "done";
  conn_.send(m, 2000);
  done_ = true;
}

}  // namespace ktrain::launch
