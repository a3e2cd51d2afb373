#include "runtime/install.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

#include "runtime/error.h"
#include "runtime/version.h"

namespace ktrain::launch {

namespace {

/// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Copies `from` to `to` through `to`.tmp, then renames it; mode 0755.
void copy_file(const std::string& from, const std::string& to) {
  Fd in{::open(from.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) config_error(errno_message("cannot read " + from));
  const std::string tmp = to + ".tmp";
  ::unlink(tmp.c_str());
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755)};
  if (out.fd < 0) config_error(errno_message("cannot write " + tmp));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) config_error(errno_message("cannot read " + from));
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(out.fd, buf + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        const std::string why = errno_message("cannot write " + tmp);
        ::unlink(tmp.c_str());
        config_error(why);
      }
      off += w;
    }
  }
  // The umask may have taken bits away; the launcher must be executable by any user.
  if (::fchmod(out.fd, 0755) != 0 || ::fsync(out.fd) != 0) {
    const std::string why = errno_message("cannot finish " + tmp);
    ::unlink(tmp.c_str());
    config_error(why);
  }
  if (::rename(tmp.c_str(), to.c_str()) != 0) {
    const std::string why = errno_message("cannot rename " + tmp + " to " + to);
    ::unlink(tmp.c_str());
    config_error(why);
  }
}

}  // namespace

std::string install_launcher(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) config_error(errno_message("--install " + dir));
  if (!S_ISDIR(st.st_mode)) config_error("--install " + dir + ": not a folder");
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) config_error(errno_message("cannot find the launcher itself (/proc/self/exe)"));
  self[n] = '\0';
  const std::string exe = self;
  const std::string here = exe.substr(0, exe.rfind('/') + 1);
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  copy_file(exe, base + "/ktrain-launch");
  std::string summary = std::string("ktrain-launch ") + version() + " installed in " + base;
  const std::string helper = here + "ktrain-gpucheck";
  if (::access(helper.c_str(), X_OK) == 0) {
    copy_file(helper, base + "/ktrain-gpucheck");
    summary += " (with ktrain-gpucheck)";
  }
  return summary;
}

}  // namespace ktrain::launch
