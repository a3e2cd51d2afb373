#pragma once
// The local terminal of an interactive stream (exec -t, dev --shell): raw mode while
// the stream lasts, its size, and resizes (SIGWINCH) as a readable file descriptor.

#include <termios.h>

#include <optional>

#include "kube/streams.h"

namespace ktrain::cmd {

/// Puts `fd` (a terminal) in raw mode, so that keys (Ctrl-C too) go to the remote
/// terminal as they are typed; restores it when destroyed.
class RawTerminal {
 public:
  explicit RawTerminal(int fd);
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_;
  bool saved_ = false;
  termios old_{};
};

/// The size of terminal `fd`, if it is one.
std::optional<kube::TermSize> terminal_size(int fd);

/// While it lives, SIGWINCH writes a byte to a pipe whose read end is fd(). One at a time.
class ResizeSignal {
 public:
  ResizeSignal();
  ~ResizeSignal();
  ResizeSignal(const ResizeSignal&) = delete;
  ResizeSignal& operator=(const ResizeSignal&) = delete;
  int fd() const { return pipe_[0]; }

 private:
  int pipe_[2] = {-1, -1};
};

}  // namespace ktrain::cmd
