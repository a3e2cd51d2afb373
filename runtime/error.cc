#include "runtime/error.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ktrain::launch {

void config_error(const std::string& message) {
  throw LaunchError(exit_status::kConfig, message);
}

std::string errno_message(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

void log_line(const std::string& message) {
  std::string line = "ktrain-launch: " + message + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ktrain::launch
