#include "runtime/termination_log.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "runtime/error.h"

namespace ktrain::launch {

bool write_termination_log(const std::string& path, const std::string& cause) {
  if (path.empty()) return false;
  int flags = O_WRONLY | O_TRUNC | O_CLOEXEC;
  if (path != "/dev/termination-log") flags |= O_CREAT;
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return false;
  std::string line = printable(cause) + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string describe_exit(int rank, int wait_status) {
  std::string who = "rank " + std::to_string(rank);
  if (WIFSIGNALED(wait_status)) return who + " killed by " + signal_name(WTERMSIG(wait_status));
  return who + " exited " + std::to_string(WEXITSTATUS(wait_status));
}

int exit_status_of(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace ktrain::launch
