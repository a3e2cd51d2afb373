#include "runtime/rendezvous.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "runtime/error.h"
#include "runtime/sha256.h"

namespace ktrain::launch {
namespace {

constexpr int kHandshakeMs = 30000;

[[noreturn]] void fail(const std::string& m) {
  throw LaunchError(exit_status::kRendezvous, m);
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string world_mac(const std::string& secret, const std::string& snonce,
                      const std::string& cnonce, const Message& world) {
  return to_hex(
      hmac_sha256(secret, "ktrain-rdzv world|" + snonce + "|" + cnonce + "|" + encode_body(world)));
}

Message hello_message(const Config& c, const NodeInfo& self, const std::string& cnonce) {
  Message m;
  m.type = "hello";
  m.set("version", "1");
  m.set("run", c.run);
  m.set("node_rank", std::to_string(self.node_rank));
  m.set("nnodes", std::to_string(self.nnodes));
  m.set("nproc", std::to_string(self.nproc));
  m.set("framework", self.framework);
  m.set("addr", self.addr);
  m.set("cnonce", cnonce);
  return m;
}

// One connection that has not finished the handshake yet.
struct Pending {
  Connection conn;
  std::string from;
  int state = 0;  // 0: waiting for hello, 1: waiting for auth
  NodeInfo info;
  std::string cnonce, snonce, hello_body;
  int64_t deadline = 0;
};

// A node that has joined, until the world is sent.
struct Joined {
  Connection conn;
  NodeInfo info;
  std::string cnonce, snonce;
};

}  // namespace

std::string server_proof(const std::string& secret, const std::string& run,
                         const std::string& cnonce, const std::string& snonce) {
  return to_hex(hmac_sha256(secret, "ktrain-rdzv server|" + run + "|" + cnonce + "|" + snonce));
}

std::string client_proof(const std::string& secret, const std::string& run,
                         const std::string& snonce, const std::string& cnonce,
                         const std::string& hello_body) {
  return to_hex(hmac_sha256(
      secret, "ktrain-rdzv client|" + run + "|" + snonce + "|" + cnonce + "|" + hello_body));
}

RendezvousServer::RendezvousServer(const Config& config, NodeInfo self)
    : config_(config), self_(std::move(self)) {
  if (config_.nnodes > 1) listen_fd_ = listen_tcp(config_.rdzv_port);
}

RendezvousServer::~RendezvousServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

World RendezvousServer::gather(const std::string& nccl_id_hex) {
  const int nnodes = config_.nnodes;
  const int64_t deadline = now_ms() + int64_t(std::llround(config_.rdzv_timeout_s * 1000));
  std::vector<std::unique_ptr<Pending>> pending;
  std::map<int, Joined> joined;

  auto abort_all = [&](const std::string& reason) {
    Message m;
    m.type = "abort";
    m.set("reason", reason);
    for (auto& [r, j] : joined) j.conn.send(m, 1000);
    fail(reason);
  };

  std::string fatal;                       // a problem with the world that ends the rendezvous
  auto handle = [&](Pending& p) -> bool {  // returns false to drop the connection
    Message m;
    while (p.conn.take(m)) {
      if (p.state == 0) {
        if (m.type != "hello") return false;
        p.hello_body = encode_body(m);
        p.cnonce = m.get("cnonce");
        p.info.node_rank = static_cast<int>(m.get_int("node_rank"));
        p.info.nnodes = static_cast<int>(m.get_int("nnodes"));
        p.info.nproc = static_cast<int>(m.get_int("nproc"));
        p.info.framework = m.get("framework");
        p.info.addr = m.get("addr");
        if (p.info.addr.empty()) p.info.addr = p.from;
        p.snonce = to_hex(random_bytes(16));
        Message c;
        c.type = "challenge";
        c.set("snonce", p.snonce);
        c.set("proof", server_proof(config_.secret, config_.run, p.cnonce, p.snonce));
        if (m.get("run") != config_.run) {
          Message r;
          r.type = "reject";
          r.set("reason",
                "it belongs to run '" + m.get("run") + "', node 0 to run '" + config_.run + "'");
          p.conn.send(r, 1000);
          log_line("refused a node from " + p.from + ": run '" + m.get("run") + "'");
          return false;
        }
        if (!p.conn.send(c)) return false;
        p.state = 1;
      } else {
        if (m.type != "auth") return false;
        std::string want =
            client_proof(config_.secret, config_.run, p.snonce, p.cnonce, p.hello_body);
        if (!constant_time_equal(m.get("mac"), want)) {
          Message r;
          r.type = "reject";
          r.set("reason", "wrong rendezvous secret");
          p.conn.send(r, 1000);
          log_line("refused a node from " + p.from + " claiming node rank " +
                   std::to_string(p.info.node_rank) + ": wrong rendezvous secret");
          return false;
        }
        const int rank = p.info.node_rank;
        if (rank <= 0 || rank >= nnodes || joined.count(rank)) {
          std::vector<NodeInfo> all{self_, p.info};
          for (auto& [r, j] : joined) all.push_back(j.info);
          try {
            build_world(config_.run, nnodes, all, config_.master_port);
          } catch (const LaunchError& e) {
            fatal = e.what();
          }
          Message a;
          a.type = "abort";
          a.set("reason", fatal);
          p.conn.send(a, 1000);
          return false;
        }
        Joined j{std::move(p.conn), p.info, p.cnonce, p.snonce};
        joined.emplace(rank, std::move(j));
        return false;  // moved out of pending
      }
    }
    return true;
  };

  while (static_cast<int>(joined.size()) < nnodes - 1) {
    int64_t now = now_ms();
    if (now >= deadline) {
      std::vector<NodeInfo> arrived{self_};
      for (auto& [r, j] : joined) arrived.push_back(j.info);
      std::vector<int> missing = missing_ranks(nnodes, arrived);
      abort_all("rendezvous timed out after " + seconds_text(config_.rdzv_timeout_s) + " s: node" +
                (missing.size() > 1 ? "s " : " ") + join_ranks(missing) + " never arrived (" +
                std::to_string(arrived.size()) + " of " + std::to_string(nnodes) + " joined)");
    }
    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& p : pending) fds.push_back({p->conn.fd(), POLLIN, 0});
    std::vector<int> joined_ranks;
    for (auto& [r, j] : joined) {
      fds.push_back({j.conn.fd(), POLLIN, 0});
      joined_ranks.push_back(r);
    }
    int64_t wait = deadline - now;
    for (auto& p : pending) wait = std::min(wait, p->deadline - now);
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0)));
    if (r < 0 && errno != EINTR) fail(errno_message("poll"));
    now = now_ms();
    if (fds[0].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        set_keepalive(fd);
        auto p = std::make_unique<Pending>();
        p->conn = Connection(fd);
        p->from = peer_address(fd);
        p->deadline = now + kHandshakeMs;
        pending.push_back(std::move(p));
      }
    }
    // Pending handshakes: read, advance, drop the finished or broken ones.
    std::vector<std::unique_ptr<Pending>> keep;
    for (size_t i = 0; i < pending.size(); ++i) {
      auto& p = pending[i];
      const pollfd* pf = (i + 1 < fds.size()) ? &fds[i + 1] : nullptr;
      bool alive = true;
      if (pf && pf->fd == p->conn.fd() && (pf->revents & (POLLIN | POLLHUP | POLLERR))) {
        alive = p->conn.read_available();
      }
      bool keep_it;
      try {
        keep_it = handle(*p) && alive && now < p->deadline;
      } catch (const LaunchError& e) {
        log_line("dropped a connection from " + p->from + ": " + e.what());
        keep_it = false;
      }
      if (keep_it) keep.push_back(std::move(p));
    }
    if (!fatal.empty()) abort_all(fatal);
    pending.clear();
    for (auto& p : keep) pending.push_back(std::move(p));
    // A node that leaves before the world is sent may come back.
    for (size_t k = 0; k < joined_ranks.size(); ++k) {
      const pollfd& pf = fds[fds.size() - joined_ranks.size() + k];
      if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
        auto it = joined.find(joined_ranks[k]);
        if (it != joined.end() && !it->second.conn.read_available()) {
          log_line("node " + std::to_string(joined_ranks[k]) + " left before the rendezvous ended");
          joined.erase(it);
        }
      }
    }
  }

  std::vector<NodeInfo> arrived{self_};
  for (auto& [r, j] : joined) arrived.push_back(j.info);
  if (self_.addr.empty()) {
    // The address the other nodes reached node 0 at.
    self_.addr = nnodes > 1 ? local_address(joined.begin()->second.conn.fd()) : "127.0.0.1";
    arrived[0].addr = self_.addr;
  }
  World world;
  try {
    world = build_world(config_.run, nnodes, arrived, config_.master_port);
  } catch (const LaunchError& e) {
    abort_all(e.what());
  }
  world.nccl_id_hex = nccl_id_hex;
  Message wm = world_message(world);
  peers_.clear();
  peers_.resize(static_cast<size_t>(nnodes));
  for (auto& [r, j] : joined) {
    Message m = wm;
    m.set("mac", world_mac(config_.secret, j.snonce, j.cnonce, wm));
    if (!j.conn.send(m)) log_line("could not send the world to node " + std::to_string(r));
    peers_[static_cast<size_t>(r)] = std::move(j.conn);
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  return world;
}

World join_rendezvous(const Config& config, const NodeInfo& self, Connection& conn,
                      const ResolverOptions& resolver) {
  const int64_t start = now_ms();
  const int64_t deadline = start + int64_t(std::llround(config.rdzv_timeout_s * 1000));
  int backoff_ms = 50;
  std::string last_error = "not tried yet";
  int64_t next_log = start + 10000;
  const std::string target = config.master_addr + ":" + std::to_string(config.rdzv_port);

  auto pause = [&] {
    int64_t left = deadline - now_ms();
    if (left <= 0) return;
    ::usleep(static_cast<useconds_t>(std::min<int64_t>(backoff_ms, left)) * 1000);
    backoff_ms = std::min(backoff_ms * 2, 500);
    if (now_ms() >= next_log) {
      log_line("still waiting for node 0 at " + target + ": " + last_error);
      next_log = now_ms() + 30000;
    }
  };

  for (;;) {
    if (now_ms() >= deadline) {
      fail("rendezvous timed out after " + seconds_text(config.rdzv_timeout_s) + " s: node 0 at " +
           target + " never completed the rendezvous (" + last_error + ")");
    }
    std::string dns_error;
    auto ip = resolve_ipv4(config.master_addr, dns_error, resolver);
    if (!ip) {
      last_error = "cannot resolve " + config.master_addr + ": " + dns_error;
      pause();
      continue;
    }
    int fd = connect_tcp(*ip, config.rdzv_port, 3000);
    if (fd < 0) {
      last_error = std::string("cannot connect to ") + *ip + ":" +
                   std::to_string(config.rdzv_port) + ": " + std::strerror(errno);
      pause();
      continue;
    }
    conn = Connection(fd);
    const std::string cnonce = to_hex(random_bytes(16));
    NodeInfo me = self;
    Message hello = hello_message(config, me, cnonce);
    if (!conn.send(hello)) {
      last_error = "node 0 closed the connection";
      pause();
      continue;
    }
    auto remaining = [&] { return static_cast<int>(std::max<int64_t>(deadline - now_ms(), 0)); };
    auto challenge = conn.receive(std::min(remaining(), kHandshakeMs));
    if (!challenge) {
      last_error = "node 0 did not answer the hello";
      pause();
      continue;
    }
    if (challenge->type == "reject") fail("node 0 refused this node: " + challenge->get("reason"));
    if (challenge->type != "challenge") fail("unexpected '" + challenge->type + "' from node 0");
    const std::string snonce = challenge->get("snonce");
    if (!constant_time_equal(challenge->get("proof"),
                             server_proof(config.secret, config.run, cnonce, snonce))) {
      fail("node 0 at " + target +
           " failed authentication: its rendezvous secret differs from this node's "
           "(KTRAIN_RDZV_SECRET)");
    }
    Message auth;
    auth.type = "auth";
    auth.set("mac", client_proof(config.secret, config.run, snonce, cnonce, encode_body(hello)));
    if (!conn.send(auth)) {
      last_error = "node 0 closed the connection";
      pause();
      continue;
    }
    for (;;) {
      bool eof = false;
      auto m = conn.receive(remaining(), &eof);
      if (!m) {
        if (eof) {
          last_error = "node 0 closed the connection";
          break;
        }
        fail("rendezvous timed out after " + seconds_text(config.rdzv_timeout_s) +
             " s: node 0 did not send the world (the other nodes did not all arrive)");
      }
      if (m->type == "reject") fail("node 0 refused this node: " + m->get("reason"));
      if (m->type == "abort") fail("node 0 gave up the rendezvous: " + m->get("reason"));
      if (m->type != "world") continue;
      Message body = *m;
      std::string mac = body.get("mac");
      body.fields.pop_back();
      if (!constant_time_equal(mac, world_mac(config.secret, snonce, cnonce, body))) {
        fail("the world from node 0 failed authentication");
      }
      return parse_world(body);
    }
    pause();
  }
}

}  // namespace ktrain::launch
