#include "runtime/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <map>

#include "runtime/error.h"
#include "runtime/net.h"
#include "runtime/termination_log.h"

namespace ktrain::launch {
namespace {

volatile sig_atomic_t g_helper_group = 0;
int g_signal_pipe[2] = {-1, -1};

extern "C" void early_stop_handler(int sig) {
  if (g_helper_group > 0) ::kill(-g_helper_group, SIGKILL);
  ::_exit(128 + sig);
}

extern "C" void pipe_handler(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(g_signal_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

void set_handler(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(sig, &sa, nullptr);
}

void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return;  // stdout is gone: drop the output, keep supervising
    off += static_cast<size_t>(n);
  }
}

struct Stream {
  int fd = -1;
  LinePrefixer prefixer;
  explicit Stream(const std::string& prefix) : prefixer(prefix) {}
};

struct Running {
  WorkerSpec spec;
  pid_t pid = -1;
  bool exited = false;
  Stream out, err;
  explicit Running(const WorkerSpec& s)
      : spec(s),
        out("[rank " + std::to_string(s.rank) + "] "),
        err("[rank " + std::to_string(s.rank) + "] ") {}
};

// Reads what is in the pipe (at most `budget` bytes); closes it on EOF.
void pump(Stream& s, std::string& out, size_t budget) {
  char buf[65536];
  size_t got = 0;
  while (s.fd >= 0 && got < budget) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.prefixer.feed(std::string_view(buf, static_cast<size_t>(n)), out);
      got += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    s.prefixer.flush(out);
    ::close(s.fd);
    s.fd = -1;
  }
}

void close_stream(Stream& s, std::string& out) {
  if (s.fd >= 0) {
    pump(s, out, SIZE_MAX);  // drains, stops at EAGAIN when a grandchild keeps it open
    s.prefixer.flush(out);
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }
}

}  // namespace

void install_early_signal_handling() {
  for (int sig : kForwardedSignals) {
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      set_handler(sig, SIG_IGN);
    } else {
      set_handler(sig, early_stop_handler);
    }
  }
  set_handler(SIGPIPE, SIG_IGN);
  if (::getpid() != 1) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

void set_helper_group(pid_t pgid) {
  g_helper_group = pgid;
}

Supervisor::Supervisor(Spawner& spawner, int output_fd, double grace_s, int node_rank)
    : spawner_(spawner), output_fd_(output_fd), grace_s_(grace_s), node_rank_(node_rank) {}

Outcome Supervisor::run(const std::vector<WorkerSpec>& specs, PeerLink& peers) {
  if (g_signal_pipe[0] < 0) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw LaunchError(1, errno_message("pipe"));
    }
  }
  set_handler(SIGCHLD, pipe_handler);
  for (int sig : kForwardedSignals) set_handler(sig, pipe_handler);

  std::vector<Running> workers;
  workers.reserve(specs.size());
  Outcome outcome;
  bool have_outcome = false;
  bool stopping = false;
  bool killed = false;
  int64_t kill_deadline = 0;
  std::string out;

  auto begin_stop = [&](int sig) {
    for (auto& w : workers) {
      if (w.pid > 0) ::kill(-w.pid, sig);
    }
    if (!stopping) {
      stopping = true;
      kill_deadline = now_ms() + int64_t(std::llround(grace_s_ * 1000));
    }
  };
  auto fail = [&](int status, const std::string& cause, bool tell_peers, int sig = SIGTERM) {
    if (have_outcome) return;
    have_outcome = true;
    outcome = {status, cause};
    log_line(cause);
    if (tell_peers) peers.local_failed(cause);
    begin_stop(sig);
  };

  for (const auto& spec : specs) {
    workers.emplace_back(spec);
    Running& w = workers.back();
    int o[2], e[2];
    if (::pipe2(o, O_CLOEXEC) != 0 || ::pipe2(e, O_CLOEXEC) != 0) {
      fail(1, errno_message("rank " + std::to_string(spec.rank) + ": pipe"), true);
      break;
    }
    SpawnRequest req{spec.argv, spec.env, o[1], e[1]};
    w.pid = spawner_.spawn(req);
    ::close(o[1]);
    ::close(e[1]);
    w.out.fd = o[0];
    w.err.fd = e[0];
    ::fcntl(o[0], F_SETFL, O_NONBLOCK);
    ::fcntl(e[0], F_SETFL, O_NONBLOCK);
    if (w.pid < 0) {
      w.exited = true;
      close_stream(w.out, out);
      close_stream(w.err, out);
      fail(1, errno_message("rank " + std::to_string(spec.rank) + " could not be started"), true);
      break;
    }
  }

  auto live = [&] {
    int n = 0;
    for (auto& w : workers) n += (w.pid > 0 && !w.exited);
    return n;
  };
  bool reported_done = false;

  auto reap = [&] {
    for (;;) {
      int st = 0;
      pid_t pid = ::waitpid(-1, &st, WNOHANG);
      if (pid <= 0) return;  // none left now (orphans included: they are reaped here too)
      for (auto& w : workers) {
        if (w.pid != pid || w.exited) continue;
        w.exited = true;
        close_stream(w.out, out);
        close_stream(w.err, out);
        bool failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (failed && !stopping) fail(exit_status_of(st), describe_exit(w.spec.rank, st), true);
      }
    }
  };

  for (;;) {
    if (live() == 0) {
      if (!have_outcome && !reported_done) {
        peers.local_done();
        reported_done = true;
      }
      if (have_outcome || peers.all_done()) break;
    }
    std::vector<pollfd> fds;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    std::vector<Stream*> streams;
    for (auto& w : workers) {
      for (Stream* s : {&w.out, &w.err}) {
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
        }
      }
    }
    std::vector<int> peer_fds = peers.fds();
    for (int fd : peer_fds) fds.push_back({fd, POLLIN, 0});
    int timeout = -1;
    if (stopping && !killed) {
      timeout = static_cast<int>(std::max<int64_t>(kill_deadline - now_ms(), 0));
    }
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) throw LaunchError(1, errno_message("poll"));

    for (size_t i = 0; i < streams.size(); ++i) {
      if (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*streams[i], out, 1 << 20);
    }
    if (fds[0].revents & POLLIN) {
      unsigned char sigs[64];
      ssize_t n;
      while ((n = ::read(g_signal_pipe[0], sigs, sizeof sigs)) > 0) {
        for (ssize_t k = 0; k < n; ++k) {
          int sig = sigs[k];
          if (sig == SIGCHLD) {
            reap();
          } else if (sig == SIGUSR1 || sig == SIGUSR2) {
            for (auto& w : workers) {
              if (w.pid > 0 && !w.exited) ::kill(-w.pid, sig);
            }
          } else {
            log_line("received " + signal_name(sig) + ": forwarding it to every worker");
            if (have_outcome) {
              begin_stop(sig);
            } else {
              fail(128 + sig,
                   "node " + std::to_string(node_rank_) + " stopped by " + signal_name(sig), true,
                   sig);
            }
          }
        }
      }
    }
    for (size_t i = 0; i < peer_fds.size(); ++i) {
      const pollfd& pf = fds[1 + streams.size() + i];
      if (!(pf.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (auto cause = peers.on_readable(pf.fd)) {
        fail(exit_status::kPeerFailed, "stopped because of a peer: " + *cause, false);
      }
    }
    if (stopping && !killed && now_ms() >= kill_deadline) {
      killed = true;
      for (auto& w : workers) {
        if (w.pid > 0 && !w.exited) {
          log_line("rank " + std::to_string(w.spec.rank) +
                   " still running after the grace "
                   "period: killing it");
          ::kill(-w.pid, SIGKILL);
        }
      }
    }
    if (!out.empty()) {
      write_all(output_fd_, out);
      out.clear();
    }
  }
  // Nothing of the workers' groups outlives the launcher.
  for (auto& w : workers) {
    if (w.pid > 0) ::kill(-w.pid, SIGKILL);
    close_stream(w.out, out);
    close_stream(w.err, out);
  }
  if (!out.empty()) write_all(output_fd_, out);
  int st;
  while (::waitpid(-1, &st, WNOHANG) > 0) {
  }
  return outcome;
}

}  // namespace ktrain::launch
