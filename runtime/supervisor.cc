#include "runtime/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include "runtime/error.h"
#include "runtime/net.h"
#include "runtime/read_file.h"
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
  std::size_t prefix_len;
  explicit Stream(const std::string& prefix) : prefixer(prefix), prefix_len(prefix.size()) {}
};

struct Running {
  WorkerSpec spec;
  pid_t pid = -1;
  bool exited = false;
  int64_t active_ms = 0;       ///< the last output or heartbeat (the start at first)
  int64_t heartbeat_seen = 0;  ///< the heartbeat file's mtime when last looked at
  Stream out, err;
  LastLines tail;  ///< its last output lines, for the termination message
  explicit Running(const WorkerSpec& s)
      : spec(s), out("[" + s.who() + "] "), err("[" + s.who() + "] ") {}
};

// The last lines of `out` from `from` on (each with `prefix_len` bytes of prefix) into
// `tail`: found from the end, so that a chunk of many lines costs only the few kept.
void keep_tail(const std::string& out, std::size_t from, std::size_t prefix_len, LastLines* tail) {
  if (!tail || from >= out.size()) return;
  std::vector<std::string_view> last;  // newest first
  std::size_t end = out.size();        // one past the current line's newline
  while (end > from && last.size() < tail->capacity()) {
    const std::size_t nl = end - 1;  // the line's '\n' (every line in `out` ends with one)
    const std::size_t prev = nl > from ? out.rfind('\n', nl - 1) : std::string::npos;
    const std::size_t begin = prev == std::string::npos || prev < from ? from : prev + 1;
    const std::size_t start = std::min(begin + prefix_len, nl);
    last.push_back(std::string_view(out).substr(start, nl - start));
    end = begin;
  }
  for (auto it = last.rbegin(); it != last.rend(); ++it) tail->add(*it);
}

// Reads what is in the pipe (at most `budget` bytes); closes it on EOF. Returns the
// bytes read. The lines go to `out`, and the last ones to `tail` too.
size_t pump(Stream& s, std::string& out, size_t budget, LastLines* tail) {
  char buf[65536];
  size_t got = 0;
  const std::size_t from = out.size();
  while (s.fd >= 0 && got < budget) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.prefixer.feed(std::string_view(buf, static_cast<size_t>(n)), out);
      got += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    s.prefixer.flush(out);
    ::close(s.fd);
    s.fd = -1;
  }
  keep_tail(out, from, s.prefix_len, tail);
  return got;
}

// The modification time of `path` in ms since the epoch, or 0.
int64_t mtime_ms(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return 0;
  return int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

std::string read_small(const std::string& path) {
  std::string s = read_regular_file(path).value_or("");
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// Runs `argv` with its output captured, for at most `limit_s` (then SIGKILL).
std::string run_capture(const std::vector<std::string>& argv, double limit_s) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return errno_message("pipe");
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return errno_message("fork");
  }
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(p[1]);
  std::string text;
  const int64_t deadline = now_ms() + int64_t(limit_s * 1000);
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) {
      text += "\n(no answer within " + std::to_string(int(limit_s)) + "s)";
      break;
    }
    pollfd f{p[0], POLLIN, 0};
    if (::poll(&f, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
    char buf[4096];
    ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1 << 20)) text.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  ::kill(pid, SIGKILL);
  int st;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return text;
}

// Logs what can be known of a hung worker: its state and kernel wait, py-spy's
// stacks (where py-spy is on PATH), its NCCL variables.
void dump_hung(const Running& w) {
  const std::string r = w.spec.who() + ": ";
  const std::string proc = "/proc/" + std::to_string(w.pid);
  std::string stat = read_small(proc + "/stat");
  // "pid (comm) S ...": the state follows the last ')'.
  if (auto close = stat.rfind(')'); close != std::string::npos && close + 2 < stat.size()) {
    log_line(r + "process " + std::to_string(w.pid) + " state " + stat.substr(close + 2, 1) +
             ", waiting in " + read_small(proc + "/wchan"));
  }
  if (std::string spy = find_on_path("py-spy", w.spec.env); !spy.empty()) {
    std::string text = run_capture({spy, "dump", "--pid", std::to_string(w.pid)}, 30);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      log_line(r + "py-spy: " + text.substr(start, end - start));
      start = end + 1;
    }
  } else {
    log_line(r +
             "no py-spy on PATH for its stacks (pip install py-spy; it needs "
             "SYS_PTRACE)");
  }
  for (const auto& [k, v] : w.spec.env) {
    if (k.rfind("NCCL_", 0) == 0) log_line(r + k + "=" + v);
  }
}

std::string format_seconds(double s) {
  if (s < 10 && std::abs(s - std::round(s)) >= 0.05) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", s);
    return buf;
  }
  const auto total = static_cast<long long>(std::llround(s));
  if (total < 60) return std::to_string(total) + "s";
  const long long h = total / 3600, m = total % 3600 / 60, sec = total % 60;
  std::string out;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (sec) out += std::to_string(sec) + "s";
  return out;
}

// Writes `text` to `path` whole (a temporary file renamed into place).
void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_line(errno_message("cannot write the stop file " + tmp));
    return;
  }
  write_all(fd, text);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    log_line(errno_message("cannot write the stop file " + path));
  }
}

void close_stream(Stream& s, std::string& out, LastLines* tail) {
  if (s.fd >= 0) {
    pump(s, out, SIZE_MAX, tail);  // drains, stops at EAGAIN when a grandchild keeps it open
    const std::size_t from = out.size();
    s.prefixer.flush(out);
    keep_tail(out, from, s.prefix_len, tail);
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
    if (!stopping && !stop_file_.empty()) {
      // Before the signal, so that a worker that looks on SIGTERM finds it.
      write_file_atomically(stop_file_, "stopping (" + signal_name(sig) + "): SIGKILL in " +
                                            format_seconds(grace_s_) + "\n");
    }
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
      fail(1, errno_message(spec.who() + ": pipe"), true);
      break;
    }
    SpawnRequest req{spec.argv, spec.env, o[1], e[1]};
    w.pid = spawner_.spawn(req);
    w.active_ms = now_ms();
    ::close(o[1]);
    ::close(e[1]);
    w.out.fd = o[0];
    w.err.fd = e[0];
    ::fcntl(o[0], F_SETFL, O_NONBLOCK);
    ::fcntl(e[0], F_SETFL, O_NONBLOCK);
    if (w.pid < 0) {
      w.exited = true;
      close_stream(w.out, out, &w.tail);
      close_stream(w.err, out, &w.tail);
      fail(1, errno_message(spec.who() + " could not be started"), true);
      break;
    }
  }

  auto live = [&] {
    int n = 0;
    for (auto& w : workers) n += (w.pid > 0 && !w.exited);
    return n;
  };
  bool reported_done = false;
  const int64_t watchdog_ms = int64_t(std::llround(watchdog_s_ * 1000));
  // How often the watchdog looks: a twentieth of its timeout, from 50 ms to 5 s.
  const int64_t check_every = std::clamp<int64_t>(watchdog_ms / 20, 50, 5000);
  int64_t next_check = watchdog_ms > 0 ? now_ms() + check_every : 0;

  auto reap = [&] {
    for (;;) {
      int st = 0;
      pid_t pid = ::waitpid(-1, &st, WNOHANG);
      if (pid <= 0) return;  // none left now (orphans included: they are reaped here too)
      for (auto& w : workers) {
        if (w.pid != pid || w.exited) continue;
        w.exited = true;
        close_stream(w.out, out, &w.tail);
        close_stream(w.err, out, &w.tail);
        bool failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (failed && !stopping && !have_outcome) {
          fail(exit_status_of(st), describe_exit(w.spec.who(), st), true);
          outcome.tail_of = w.spec.who();
          outcome.tail = w.tail.lines();
        }
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
    std::vector<std::pair<Stream*, Running*>> streams;
    for (auto& w : workers) {
      for (Stream* s : {&w.out, &w.err}) {
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back({s, &w});
        }
      }
    }
    std::vector<int> peer_fds = peers.fds();
    for (int fd : peer_fds) fds.push_back({fd, POLLIN, 0});
    int timeout = -1;
    if (stopping && !killed) {
      timeout = static_cast<int>(std::max<int64_t>(kill_deadline - now_ms(), 0));
    } else if (watchdog_ms > 0 && !stopping) {
      timeout = static_cast<int>(std::max<int64_t>(next_check - now_ms(), 0));
    }
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) throw LaunchError(1, errno_message("poll"));

    for (size_t i = 0; i < streams.size(); ++i) {
      if (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (pump(*streams[i].first, out, 1 << 20, &streams[i].second->tail) > 0) {
          streams[i].second->active_ms = now_ms();
        }
      }
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
    if (watchdog_ms > 0 && !stopping && now_ms() >= next_check) {
      const int64_t now = now_ms();
      next_check = now + check_every;
      for (auto& w : workers) {
        if (w.pid <= 0 || w.exited) continue;
        // A touch since the last look (the mtime is wall-clock time, now_ms() is not).
        if (const int64_t m = mtime_ms(w.spec.heartbeat_file); m != 0 && m != w.heartbeat_seen) {
          w.heartbeat_seen = m;
          w.active_ms = now;
        }
        if (now - w.active_ms < watchdog_ms) continue;
        if (!out.empty()) {
          write_all(output_fd_, out);  // its last lines first
          out.clear();
        }
        const std::string rank = w.spec.who();
        const std::string silent = format_seconds((now - w.active_ms) / 1000.0);
        log_line("watchdog: " + rank + " has had no output and no heartbeat for " + silent +
                 "; what it is doing:");
        dump_hung(w);
        fail(exit_status::kHung,
             rank + " hung: no output and no heartbeat for " + silent + " (watchdog timeout " +
                 format_seconds(watchdog_s_) + ")",
             true);
        break;
      }
    }
    if (stopping && !killed && now_ms() >= kill_deadline) {
      killed = true;
      for (auto& w : workers) {
        if (w.pid > 0 && !w.exited) {
          log_line(w.spec.who() +
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
    close_stream(w.out, out, &w.tail);
    close_stream(w.err, out, &w.tail);
  }
  if (!out.empty()) write_all(output_fd_, out);
  int st;
  while (::waitpid(-1, &st, WNOHANG) > 0) {
  }
  return outcome;
}

}  // namespace ktrain::launch
