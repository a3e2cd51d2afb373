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

bool write_termination_log(const std::string& path, const std::string& cause,
                           const std::string& who, const std::vector<std::string>& tail) {
  if (tail.empty()) return write_termination_log(path, cause);
  constexpr std::size_t kMaxBytes = 4000;
  const std::string head = printable(cause) + "\n" + kLastLinesOf + who + ":\n";
  std::vector<std::string> lines;
  std::size_t bytes = head.size();
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {  // the newest kept first
    std::string l = printable(*it) + "\n";
    if (bytes + l.size() > kMaxBytes) break;
    bytes += l.size();
    lines.push_back(std::move(l));
  }
  std::string text = head;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) text += *it;
  if (path.empty()) return false;
  int flags = O_WRONLY | O_TRUNC | O_CLOEXEC;
  if (path != "/dev/termination-log") flags |= O_CREAT;
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return false;
  // (The first line alone is the cause, as a reader of one line expects.)
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

void LastLines::add(std::string_view line) {
  if (max_ == 0) return;
  if (lines_.size() == max_) lines_.erase(lines_.begin());
  lines_.emplace_back(line.substr(0, kMaxTailLine));
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string describe_exit(int rank, int wait_status) {
  return describe_exit("rank " + std::to_string(rank), wait_status);
}

std::string describe_exit(const std::string& who, int wait_status) {
  if (WIFSIGNALED(wait_status)) return who + " killed by " + signal_name(WTERMSIG(wait_status));
  return who + " exited " + std::to_string(WEXITSTATUS(wait_status));
}

int exit_status_of(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace ktrain::launch
