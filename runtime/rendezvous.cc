#include "runtime/rendezvous.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "runtime/error.h"
#include "runtime/session.h"
#include "runtime/sha256.h"

namespace ktrain::launch {
namespace {

// How long a node waits for node 0's challenge.
constexpr int kChallengeMs = 10000;
// Lines node 0 logs about connections that fail the handshake; the rest are counted.
constexpr int kLoggedRefusals = 10;

[[noreturn]] void fail(const std::string& m) {
  throw LaunchError(exit_status::kRendezvous, m);
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

Message hello_message(const Config& c, const NodeInfo& self, const std::string& cnonce) {
  Message m;
  m.type = "hello";
  m.set("version", kRendezvousProtocol);
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
  std::string version, run, cnonce, snonce, hello_body;
  int64_t deadline = 0;
};

// A node that has joined, until the world is sent.
struct Joined {
  Connection conn;
  NodeInfo info;
};

// Logs what befalls connections that fail the handshake: anyone who reaches the
// port can cause these lines, so only the first few are written and the rest
// counted, with a summary at the end of the rendezvous.
class RefusalLog {
 public:
  ~RefusalLog() {
    if (count_ > kLoggedRefusals) {
      log_line(std::to_string(count_) + " connections failed the rendezvous handshake (" +
               std::to_string(kLoggedRefusals) + " logged)");
    }
  }
  void note(const std::string& line) {
    ++count_;
    if (count_ <= kLoggedRefusals) log_line(line);
    if (count_ == kLoggedRefusals) {
      log_line("further connections that fail the handshake are counted, not logged");
    }
  }

 private:
  int count_ = 0;
};

// Closes the listening socket when the rendezvous ends, however it ends.
struct ListenerCloser {
  int& fd;
  ~ListenerCloser() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool out_of_descriptors(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

}  // namespace

Hello parse_hello(const Message& m) {
  Hello h;
  h.version = m.get("version");
  h.run = m.get("run");
  h.cnonce = m.get("cnonce");
  h.info.node_rank = static_cast<int>(m.get_int("node_rank", 0, kMaxNodes - 1));
  h.info.nnodes = static_cast<int>(m.get_int("nnodes", 1, kMaxNodes));
  h.info.nproc = static_cast<int>(m.get_int("nproc", 1, kMaxProcsPerNode));
  h.info.framework = m.get("framework");
  h.info.addr = m.get("addr");
  return h;
}

int max_pending_connections(int nnodes) {
  return static_cast<int>(std::clamp<int64_t>(int64_t(nnodes) * 4, 16, 4096));
}

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

RendezvousServer::RendezvousServer(const Config& config, NodeInfo self, RendezvousLimits limits)
    : config_(config), self_(std::move(self)), limits_(limits) {
  if (config_.nnodes > 1) listen_fd_ = listen_tcp(config_.rdzv_port, config_.pod_ip);
}

RendezvousServer::~RendezvousServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

World RendezvousServer::gather(const std::string& nccl_id_hex) {
  const int nnodes = config_.nnodes;
  const int64_t deadline = now_ms() + int64_t(std::llround(config_.rdzv_timeout_s * 1000));
  const size_t max_pending = static_cast<size_t>(
      limits_.max_pending > 0 ? limits_.max_pending : max_pending_connections(nnodes));
  ListenerCloser closer{listen_fd_};
  RefusalLog refusals;
  std::deque<std::unique_ptr<Pending>> pending;  // oldest first
  std::map<int, Joined> joined;
  int64_t accept_again = 0;  // after a failed accept: when to try again
  bool told_accept_failure = false;

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
        if (m.type != "hello") fail("expected a hello, got '" + m.type + "'");
        p.hello_body = encode_body(m);
        Hello h = parse_hello(m);
        p.version = std::move(h.version);
        p.run = std::move(h.run);
        p.cnonce = std::move(h.cnonce);
        p.info = std::move(h.info);
        if (p.info.addr.empty()) p.info.addr = p.from;
        p.snonce = to_hex(random_bytes(16));
        Message c;
        c.type = "challenge";
        c.set("snonce", p.snonce);
        c.set("proof", server_proof(config_.secret, p.run, p.cnonce, p.snonce));
        if (!p.conn.send(c, 1000)) return false;
        p.state = 1;
        continue;
      }
      if (m.type != "auth") fail("expected an auth, got '" + m.type + "'");
      const std::string who = "node rank " + std::to_string(p.info.node_rank) + " from " + p.from;
      if (!constant_time_equal(m.get("mac"), client_proof(config_.secret, p.run, p.snonce, p.cnonce,
                                                          p.hello_body))) {
        Message r;
        r.type = "reject";
        r.set("reason", "wrong rendezvous secret");
        p.conn.send(r, 1000);
        refusals.note("refused " + who + ": wrong rendezvous secret");
        return false;
      }
      // The node holds the secret: from here on each message either way is sealed.
      p.conn.secure(
          Session(session_key(config_.secret, p.run, p.snonce, p.cnonce), SessionRole::kNode0));
      auto refuse = [&](const std::string& reason) {
        Message r;
        r.type = "reject";
        r.set("reason", reason);
        p.conn.send(r, 1000);
        log_line("refused " + who + ": " + reason);
        return false;
      };
      if (p.version != kRendezvousProtocol) {
        return refuse("it speaks rendezvous protocol " + p.version + ", node 0 protocol " +
                      kRendezvousProtocol + " (ktrain-launch versions differ)");
      }
      if (p.run != config_.run) {
        return refuse("it belongs to run '" + p.run + "', node 0 to run '" + config_.run + "'");
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
      joined.emplace(rank, Joined{std::move(p.conn), p.info});
      return false;  // moved out of pending
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
    const bool accepting = now >= accept_again;
    std::vector<pollfd> fds;
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    for (auto& p : pending) fds.push_back({p->conn.fd(), POLLIN, 0});
    std::vector<int> joined_ranks;
    for (auto& [r, j] : joined) {
      fds.push_back({j.conn.fd(), POLLIN, 0});
      joined_ranks.push_back(r);
    }
    int64_t wait = deadline - now;
    for (auto& p : pending) wait = std::min(wait, p->deadline - now);
    if (!accepting) wait = std::min(wait, accept_again - now);
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0)));
    if (r < 0 && errno != EINTR) fail(errno_message("poll"));
    now = now_ms();

    // Pending handshakes: read, advance, drop the finished, broken or late ones.
    std::deque<std::unique_ptr<Pending>> keep;
    for (size_t i = 0; i < pending.size(); ++i) {
      auto& p = pending[i];
      bool alive = true;
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) alive = p->conn.read_available();
      bool keep_it = false;
      try {
        keep_it = handle(*p);
      } catch (const LaunchError& e) {
        refusals.note("dropped a connection from " + p->from + ": " + e.what());
      }
      if (keep_it && !alive) {
        if (p->state == 1) {
          refusals.note("node rank " + std::to_string(p->info.node_rank) + " from " + p->from +
                        " hung up after the challenge (does it hold another rendezvous secret?)");
        }
        keep_it = false;
      }
      if (keep_it && now >= p->deadline) {
        refusals.note("dropped a connection from " + p->from + ": no " +
                      (p->state == 0 ? "hello" : "auth") + " within " +
                      seconds_text(limits_.handshake_ms / 1000.0) + " s");
        keep_it = false;
      }
      if (keep_it) keep.push_back(std::move(p));
    }
    pending = std::move(keep);
    if (!fatal.empty()) abort_all(fatal);

    // A node that leaves before the world is sent may come back; one that sends
    // anything before the world is not following the protocol.
    for (size_t k = 0; k < joined_ranks.size(); ++k) {
      const pollfd& pf = fds[fds.size() - joined_ranks.size() + k];
      if (!(pf.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto it = joined.find(joined_ranks[k]);
      if (it == joined.end()) continue;
      Connection& c = it->second.conn;
      const std::string node = "node " + std::to_string(joined_ranks[k]);
      std::string why;
      bool open = c.read_available();
      try {
        Message m;
        if (c.take(m)) why = "dropped " + node + ": it sent '" + m.type + "' before the world";
      } catch (const LaunchError& e) {
        why = "dropped " + node + ": " + e.what();
      }
      if (why.empty() && !open) why = node + " left before the rendezvous ended";
      if (!why.empty()) {
        log_line(why);
        joined.erase(it);
      }
    }

    // New connections.
    if (accepting && (fds[0].revents & POLLIN)) {
      // At most max_pending at a time, so that the hellos of those accepted are
      // read before a burst of newer connections pushes them out.
      for (size_t burst = 0; burst < max_pending; ++burst) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          const int err = errno;
          if (err == EINTR || err == ECONNABORTED) continue;
          if (!out_of_descriptors(err)) break;  // EAGAIN: none left
          if (!told_accept_failure) {
            told_accept_failure = true;
            log_line("cannot accept a rendezvous connection: " + std::string(std::strerror(err)) +
                     " (closing the oldest connections still in the handshake, else waiting " +
                     std::to_string(limits_.accept_pause_ms) + " ms before trying again)");
          }
          if (!pending.empty()) {
            refusals.note("out of descriptors: closed the connection from " +
                          pending.front()->from + " still in the handshake");
            pending.pop_front();
            continue;
          }
          accept_again = now + limits_.accept_pause_ms;
          break;
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        set_keepalive(fd);
        auto p = std::make_unique<Pending>();
        p->conn = Connection(fd);
        p->from = peer_address(fd);
        p->deadline = now + limits_.handshake_ms;
        if (pending.size() >= max_pending) {
          refusals.note("more than " + std::to_string(max_pending) +
                        " connections in the handshake: closed the oldest, from " +
                        pending.front()->from);
          pending.pop_front();
        }
        pending.push_back(std::move(p));
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
  const Message wm = world_message(world);
  peers_.clear();
  peers_.resize(static_cast<size_t>(nnodes));
  for (auto& [r, j] : joined) {
    if (!j.conn.send(wm)) log_line("could not send the world to node " + std::to_string(r));
    peers_[static_cast<size_t>(r)] = std::move(j.conn);
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
    conn.close();
    int64_t left = deadline - now_ms();
    if (left <= 0) return;
    ::usleep(static_cast<useconds_t>(std::min<int64_t>(backoff_ms, left)) * 1000);
    backoff_ms = std::min(backoff_ms * 2, 500);
    if (now_ms() >= next_log) {
      log_line("still waiting for node 0 at " + target + ": " + last_error);
      next_log = now_ms() + 30000;
    }
  };
  auto remaining = [&] { return static_cast<int>(std::max<int64_t>(deadline - now_ms(), 0)); };

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
    Message hello = hello_message(config, self, cnonce);
    if (!conn.send(hello)) {
      last_error = "node 0 closed the connection";
      pause();
      continue;
    }
    // Until node 0 has proved the secret, nothing it says is believed: a refusal
    // or garbage only makes this node try again.
    std::optional<Message> challenge;
    try {
      challenge = conn.receive(std::min(remaining(), kChallengeMs));
    } catch (const LaunchError& e) {
      last_error = std::string("node 0 answered the hello with garbage: ") + e.what();
      pause();
      continue;
    }
    if (!challenge) {
      last_error = "node 0 did not answer the hello";
      pause();
      continue;
    }
    const std::string* snonce = challenge->find("snonce");
    const std::string* proof = challenge->find("proof");
    if (challenge->type != "challenge" || !snonce || !proof) {
      const std::string* reason = challenge->find("reason");
      last_error = challenge->type == "reject"
                       ? "node 0 refused this node without proving it holds the secret: " +
                             (reason ? *reason : std::string("no reason given"))
                       : "node 0 answered the hello with '" + challenge->type + "'";
      pause();
      continue;
    }
    if (!constant_time_equal(*proof, server_proof(config.secret, config.run, cnonce, *snonce))) {
      fail("node 0 at " + target +
           " failed authentication: its rendezvous secret differs from this node's "
           "(KTRAIN_RDZV_SECRET, or the Job's uid where the Secret <run>-rdzv is not there)");
    }
    Message auth;
    auth.type = "auth";
    auth.set("mac", client_proof(config.secret, config.run, *snonce, cnonce, encode_body(hello)));
    if (!conn.send(auth)) {
      last_error = "node 0 closed the connection";
      pause();
      continue;
    }
    conn.secure(
        Session(session_key(config.secret, config.run, *snonce, cnonce), SessionRole::kNode));
    for (;;) {
      bool eof = false;
      std::optional<Message> m;
      try {
        m = conn.receive(remaining(), &eof);
      } catch (const LaunchError& e) {
        last_error = std::string("node 0's answer to the auth: ") + e.what();
        break;
      }
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
      if (m->type == "world") return parse_world(*m);
    }
    pause();
  }
}

}  // namespace ktrain::launch
