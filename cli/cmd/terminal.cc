#include "cmd/terminal.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace ktrain::cmd {

RawTerminal::RawTerminal(int fd) : fd_(fd) {
  if (::tcgetattr(fd_, &old_) != 0) return;
  termios raw = old_;
  ::cfmakeraw(&raw);
  saved_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
}

RawTerminal::~RawTerminal() {
  if (saved_) ::tcsetattr(fd_, TCSANOW, &old_);
}

std::optional<kube::TermSize> terminal_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return std::nullopt;
  return kube::TermSize{ws.ws_col, ws.ws_row};
}

namespace {

std::atomic<int> g_resize_fd{-1};

void on_winch(int) {
  const int saved = errno;
  const int fd = g_resize_fd.load();
  if (fd >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(fd, &c, 1);
  }
  errno = saved;
}

}  // namespace

ResizeSignal::ResizeSignal() {
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return;
  g_resize_fd = pipe_[1];
  struct sigaction sa {};
  sa.sa_handler = on_winch;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGWINCH, &sa, nullptr);
}

ResizeSignal::~ResizeSignal() {
  signal(SIGWINCH, SIG_DFL);
  g_resize_fd = -1;
  if (pipe_[0] >= 0) ::close(pipe_[0]);
  if (pipe_[1] >= 0) ::close(pipe_[1]);
}

}  // namespace ktrain::cmd
