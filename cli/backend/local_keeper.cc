// The keeper of a local run (see local_run.h). It is the parent of the run's
// ktrain-launch processes: it owns their output pipes, so every line it writes to
// node-<i>.log is whole and carries the time it arrived.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/local_run.h"
#include "base/error.h"
#include "base/timefmt.h"

extern char** environ;

namespace ktrain::backend {

namespace {

int g_signal_pipe[2] = {-1, -1};

/// ktrain-launch's exit status for "stopped because a peer failed" (man ktrain-launch).
constexpr int kPeerStopped = 75;

void on_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &b, 1);
}

std::string now_rfc3339() {
  return format_rfc3339_nanos(std::chrono::system_clock::now());
}

/// Whether TCP port `port` on 127.0.0.1 can be bound now.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

/// A first port of `count` consecutive free TCP ports on 127.0.0.1 (checked and
/// released; the launcher and the workers bind them soon after). Every worker of a
/// local run listens on KTRAIN_MASTER_PORT + 1 + rank, so the run needs a block.
int free_port_block(int count) {
  std::random_device rd;
  std::uniform_int_distribution<int> pick(20000, 60000 - count);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = pick(rd);
    bool ok = true;
    for (int p = base; ok && p < base + count; ++p) ok = port_free(p);
    if (ok) return base;
  }
  throw Error("cannot find " + std::to_string(count) + " free ports on 127.0.0.1");
}

std::string read_secret(const std::string& dir) {
  std::ifstream f(dir + "/secret");
  std::string s;
  std::getline(f, s);
  return s;
}

/// One node's output: bytes in, whole timestamped lines out.
struct NodeOutput {
  int fd = -1;
  std::string partial;
  std::ofstream log;

  void write_line(const std::string& line) {
    log << now_rfc3339() << ' ' << line << '\n';
    log.flush();
  }
  void feed(const char* data, size_t n) {
    partial.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      write_line(partial.substr(start, nl - start));
    }
    partial.erase(0, start);
    // A line longer than 64 KiB is written in pieces rather than held without bound.
    if (partial.size() > 65536) {
      write_line(partial);
      partial.clear();
    }
  }
  void finish() {
    if (!partial.empty()) write_line(partial);
    partial.clear();
  }
};

pid_t start_node(const LocalRun& run, int index, const std::map<std::string, std::string>& extra,
                 const std::string& launcher, int out_fd) {
  std::vector<std::string> env_strings;
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : run.env) env[k] = v;
  for (const auto& [k, v] : extra) env[k] = v;
  env["KTRAIN_NODE_RANK"] = std::to_string(index);
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);

  std::vector<std::string> args = {launcher, "--"};
  args.insert(args.end(), run.command.begin(), run.command.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot start node: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (!run.directory.empty() && ::chdir(run.directory.c_str()) != 0) {
      std::fprintf(stderr, "ktrain: cannot enter '%s': %s\n", run.directory.c_str(),
                   std::strerror(errno));
      ::_exit(78);
    }
    ::execve(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "ktrain: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

std::string first_line_of(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

namespace {

int keep(const std::string& run_dir, LocalRun& run);

}  // namespace

int run_local_keeper(const std::string& run_dir) {
  if (::fcntl(3, F_GETFD) != -1) ::fcntl(3, F_SETFD, FD_CLOEXEC);  // not for the nodes
  LocalRun run;
  try {
    run = read_local_run(run_dir);
    return keep(run_dir, run);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktrain: %s\n", e.what());
    run.state = RunState::kFailed;
    run.reason = e.what();
    if (!run.name.empty()) write_local_run(run_dir, run);
    return 1;
  }
}

namespace {

int keep(const std::string& run_dir, LocalRun& run) {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const std::string launcher = run.launcher;
  // One block: the rendezvous port, the master port, and one port per worker after it.
  const int ports = free_port_block(2 + run.nodes * run.nproc + 1);
  std::map<std::string, std::string> extra = {
      {"KTRAIN_RUN", run.name},
      {"KTRAIN_NNODES", std::to_string(run.nodes)},
      {"KTRAIN_NPROC_PER_NODE", std::to_string(run.nproc)},
      {"KTRAIN_GPUS", std::to_string(run.gpus)},
      {"KTRAIN_MASTER_ADDR", "127.0.0.1"},
      {"KTRAIN_POD_IP", "127.0.0.1"},
      {"KTRAIN_RDZV_PORT", std::to_string(ports)},
      {"KTRAIN_MASTER_PORT", std::to_string(ports + 1)},
      {"KTRAIN_RDZV_SECRET", read_secret(run_dir)},
      {"KTRAIN_FRAMEWORK", run.framework},
      {"KTRAIN_PREFLIGHT", run.preflight},
      {"KTRAIN_RDZV_TIMEOUT", "120"},
      {"KTRAIN_GRACE_PERIOD", std::to_string(project::launcher_grace_seconds(run.grace_s))},
  };

  std::vector<NodeOutput> outputs(static_cast<size_t>(run.nodes));
  run.node_status.assign(static_cast<size_t>(run.nodes), LocalNode{});
  std::map<pid_t, int> node_of_pid;
  for (int i = 0; i < run.nodes; ++i) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return 1;
    auto& out = outputs[static_cast<size_t>(i)];
    out.log.open(run_dir + "/node-" + std::to_string(i) + ".log", std::ios::app);
    auto node_extra = extra;
    node_extra["KTRAIN_TERMINATION_LOG"] = run_dir + "/node-" + std::to_string(i) + ".cause";
    const pid_t pid = start_node(run, i, node_extra, launcher, p[1]);
    ::close(p[1]);
    out.fd = p[0];
    auto& node = run.node_status[static_cast<size_t>(i)];
    node.index = i;
    node.pid = pid;
    node.started = now_rfc3339();
    node_of_pid[pid] = i;
  }
  run.state = RunState::kRunning;
  run.keeper_pid = ::getpid();
  write_local_run(run_dir, run);
  // Tell `ktrain submit` (fd 3, when it waits) that the nodes have started.
  if (::fcntl(3, F_GETFD) != -1) {
    [[maybe_unused]] auto n = ::write(3, "1", 1);
    ::close(3);
  }

  int running = run.nodes;
  int open_pipes = run.nodes;
  bool stopping = false;
  std::chrono::steady_clock::time_point kill_at{};
  while (running > 0 || open_pipes > 0) {
    std::vector<pollfd> fds;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    for (auto& o : outputs) fds.push_back({o.fd, static_cast<short>(o.fd >= 0 ? POLLIN : 0), 0});
    ::poll(fds.data(), fds.size(), 200);
    if (fds[0].revents & POLLIN) {
      unsigned char b[16];
      while (::read(g_signal_pipe[0], b, sizeof b) > 0) {
      }
      if (!stopping) {
        stopping = true;
        // As the kubelet does: SIGKILL when the grace period is over (the launchers
        // have passed SIGTERM on and given their workers a little less).
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(run.grace_s);
        for (const auto& n : run.node_status) {
          if (!n.exit_code && !n.signal) ::kill(-n.pid, SIGTERM);
        }
        if (run.reason.empty()) run.reason = "stopped by request";
      }
    }
    if (stopping && std::chrono::steady_clock::now() >= kill_at) {
      for (const auto& n : run.node_status) {
        if (!n.exit_code && !n.signal) ::kill(-n.pid, SIGKILL);
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto& o = outputs[i];
      if (o.fd < 0 || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = ::read(o.fd, buf, sizeof buf);
      if (n > 0) {
        o.feed(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        o.finish();
        ::close(o.fd);
        o.fd = -1;
        --open_pipes;
      }
    }
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = node_of_pid.find(pid);
      if (it == node_of_pid.end()) continue;
      auto& node = run.node_status[static_cast<size_t>(it->second)];
      node.finished = now_rfc3339();
      if (WIFEXITED(status)) node.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) node.signal = WTERMSIG(status);
      node.cause = first_line_of(run_dir + "/node-" + std::to_string(node.index) + ".cause");
      const bool failed = !(node.exit_code && *node.exit_code == 0);
      if (failed && node.cause.empty()) {
        node.cause = node.signal ? "node " + std::to_string(node.index) + " killed by signal " +
                                       std::to_string(*node.signal)
                                 : "node " + std::to_string(node.index) + " exited " +
                                       std::to_string(*node.exit_code);
      }
      // The node that failed first is the first to fail on its own: a node that
      // stopped because a peer failed (kPeerStopped) yields to the peer that did.
      const bool peer_stopped = node.exit_code && *node.exit_code == kPeerStopped;
      const bool first_was_peer_stopped =
          run.first_failed >= 0 &&
          run.node_status[static_cast<size_t>(run.first_failed)].exit_code == kPeerStopped;
      if (failed && (run.first_failed < 0 || (first_was_peer_stopped && !peer_stopped))) {
        run.first_failed = node.index;
        run.reason = node.cause;
      }
      --running;
      write_local_run(run_dir, run);
    }
  }
  bool ok = !stopping;
  for (const auto& n : run.node_status) ok = ok && n.exit_code && *n.exit_code == 0;
  run.state = ok ? RunState::kSucceeded : RunState::kFailed;
  // Stopped by `ktrain stop` (it leaves the file `stop` before signalling): the run is
  // kept, to be resumed, and the nodes' exits on SIGTERM are no failure.
  std::error_code ec;
  if (stopping && std::filesystem::exists(run_dir + "/stop", ec)) {
    run.state = RunState::kStopped;
    run.reason = "stopped by 'ktrain stop'";
    run.first_failed = -1;
  }
  write_local_run(run_dir, run);
  return ok ? 0 : 1;
}

}  // namespace

}  // namespace ktrain::backend
