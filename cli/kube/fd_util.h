#pragma once
// File-descriptor helpers of the streaming subresources (exec, port-forward).

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "base/error.h"

namespace ktrain::kube {

/// Writes all of `data` to `fd`; false when it is gone.
inline bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// A pipe whose write end, once written, wakes a poll() on its read end.
struct StopPipe {
  int fds[2] = {-1, -1};
  StopPipe() {
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw Error("cannot make a pipe: " + std::string(std::strerror(errno)));
  }
  ~StopPipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  StopPipe(const StopPipe&) = delete;
  StopPipe& operator=(const StopPipe&) = delete;
  void signal() {
    char c = 0;
    [[maybe_unused]] auto n = ::write(fds[1], &c, 1);
  }
  /// Empties the pipe, so that the next poll() waits for the next signal().
  void drain() {
    char buf[64];
    while (::read(fds[0], buf, sizeof buf) > 0) {
    }
  }
};

}  // namespace ktrain::kube
