#include "runtime/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace ktrain::launch {

std::optional<std::string> read_regular_file(const std::string& path, std::size_t max) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    out.emplace();
    char buf[4096];
    while (out->size() < max) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) out.reset();
      if (n <= 0) break;
      out->append(buf, static_cast<std::size_t>(n));
    }
    if (out && out->size() > max) out->resize(max);
  }
  ::close(fd);
  return out;
}

}  // namespace ktrain::launch
