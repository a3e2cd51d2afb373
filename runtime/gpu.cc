#include "runtime/gpu.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>

#include "runtime/error.h"
#include "runtime/net.h"
#include "runtime/spawner.h"
#include "runtime/supervisor.h"
#include "runtime/termination_log.h"

namespace ktrain::launch {

void parse_helper_output(std::string_view text, HelperResult& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    size_t sp = line.find(' ');
    std::string key(line.substr(0, sp));
    std::string value = sp == std::string_view::npos ? "" : std::string(line.substr(sp + 1));
    if (key.empty()) continue;
    if (key == "info") {
      out.info.push_back(value);
    } else if (key == "error") {
      if (out.error.empty()) out.error = value;
    } else {
      out.facts[key] = value;
    }
  }
}

std::string find_gpucheck(const Config& config) {
  std::string path = config.gpucheck_path;
  if (path.empty()) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string self(buf, static_cast<size_t>(n));
    path = self.substr(0, self.rfind('/') + 1) + "ktrain-gpucheck";
  }
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

bool nvidia_device_present() {
  struct stat st {};
  return ::stat("/dev/nvidiactl", &st) == 0 || ::stat("/dev/nvidia0", &st) == 0;
}

HelperResult run_gpucheck(const std::string& path, const std::vector<std::string>& args,
                          double timeout_s, const std::function<PeerLink*()>& peers,
                          const FactCallback& on_fact) {
  HelperResult result;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    result.status = exit_status::kPreflight;
    result.error = errno_message("pipe");
    return result;
  }
  SpawnRequest req;
  req.argv.push_back(path);
  req.argv.insert(req.argv.end(), args.begin(), args.end());
  req.stdout_fd = p[1];
  ProcessSpawner spawner;
  pid_t pid = spawner.spawn(req);
  ::close(p[1]);
  if (pid < 0) {
    ::close(p[0]);
    result.status = exit_status::kPreflight;
    result.error = errno_message("cannot start " + path);
    return result;
  }
  set_helper_group(pid);
  auto reap = [&] {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    set_helper_group(0);
    ::kill(-pid, SIGKILL);  // anything the helper left behind
    return st;
  };
  std::string text;
  size_t parsed = 0;  // bytes of `text` already handed to on_fact
  const int64_t deadline = now_ms() + int64_t(std::llround(timeout_s * 1000));
  int fd = p[0];
  try {
    while (fd >= 0) {
      PeerLink* link = peers ? peers() : nullptr;
      std::vector<pollfd> fds{{fd, POLLIN, 0}};
      std::vector<int> peer_fds = link ? link->fds() : std::vector<int>{};
      for (int f : peer_fds) fds.push_back({f, POLLIN, 0});
      int64_t left = deadline - now_ms();
      if (left <= 0) {
        ::kill(-pid, SIGKILL);
        result.error = "GPU check timed out after " + std::to_string(std::lround(timeout_s)) + " s";
        break;
      }
      int r = ::poll(fds.data(), fds.size(), static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
          text.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          ::close(fd);
          fd = -1;
        }
      }
      for (size_t nl; (nl = text.find('\n', parsed)) != std::string::npos; parsed = nl + 1) {
        HelperResult line;
        parse_helper_output(std::string_view(text).substr(parsed, nl - parsed), line);
        for (const auto& [k, v] : line.facts) {
          if (on_fact) on_fact(k, v);
        }
      }
      for (size_t i = 0; i < peer_fds.size(); ++i) {
        if (!(fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (auto cause = link->on_readable(peer_fds[i])) {
          result.stopped_by_peer = *cause;
          ::kill(-pid, SIGKILL);
          break;
        }
      }
      if (!result.stopped_by_peer.empty()) break;
    }
  } catch (...) {
    ::kill(-pid, SIGKILL);
    if (fd >= 0) ::close(fd);
    reap();
    throw;
  }
  if (fd >= 0) ::close(fd);
  int st = reap();
  parse_helper_output(text, result);
  result.status = exit_status_of(st);
  if ((result.status == 126 || result.status == 127) && text.empty() &&
      result.stopped_by_peer.empty()) {
    result.unavailable = true;
    result.error = "the GPU helper " + path + " cannot run in this image (exit status " +
                   std::to_string(result.status) + ")";
    return result;
  }
  if (WIFSIGNALED(st) && result.error.empty() && result.stopped_by_peer.empty()) {
    result.error = "the GPU check crashed (" + signal_name(WTERMSIG(st)) + ")";
  }
  if (result.status != 0 && result.error.empty() && result.stopped_by_peer.empty()) {
    result.error = "the GPU check failed with status " + std::to_string(result.status);
  }
  return result;
}

double allreduce_busbw(double algbw, int nranks) {
  if (nranks <= 0) return 0;
  return algbw * 2.0 * (nranks - 1) / nranks;
}

std::vector<std::string> nccl_search_patterns(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  auto get = [&](const char* k) -> std::string {
    auto it = env.find(k);
    return it == env.end() ? "" : it->second;
  };
  const std::string lib = "/nvidia/nccl/lib/libnccl.so.2";
  if (auto conda = get("CONDA_PREFIX"); !conda.empty()) {
    out.push_back(conda + "/lib/libnccl.so.2");
    out.push_back(conda + "/lib/python3*/site-packages" + lib);
  }
  if (auto venv = get("VIRTUAL_ENV"); !venv.empty()) {
    out.push_back(venv + "/lib/python3*/site-packages" + lib);
  }
  out.push_back("/usr/local/lib/python3*/dist-packages" + lib);
  out.push_back("/usr/local/lib/python3*/site-packages" + lib);
  out.push_back("/usr/lib/python3/dist-packages" + lib);
  out.push_back("/opt/conda/lib/libnccl.so.2");
  out.push_back("/opt/conda/lib/python3*/site-packages" + lib);
  if (auto home = get("HOME"); !home.empty()) {
    out.push_back(home + "/.local/lib/python3*/site-packages" + lib);
  }
  return out;
}

}  // namespace ktrain::launch
