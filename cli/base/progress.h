#pragma once
// Progress of long work on stderr (build: layers made and uploaded; submit: objects
// sent; delete --all: runs removed). On a terminal, one live line redrawn in place (at
// most ten times a second) and cleared when done; otherwise, plain lines: each step,
// and for counts a line at each quarter of the way. Nothing with -q.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/env.h"

namespace ktrain {

/// "1.5 MiB".
std::string human_bytes(double bytes);

class Progress {
 public:
  /// `prefix` starts every plain line ("ktrain build").
  Progress(Env& env, std::string prefix);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// A step done: a plain line, on a terminal too (above the live line).
  void step(const std::string& line);
  /// `n` bytes of `what` so far, with the rate since `what` began (live, terminal only).
  void bytes(const std::string& what, std::uint64_t n);
  /// `done` of `total` `what` ("objects sent"): live on a terminal; otherwise a plain line
  /// when a quarter more is done, and at the end.
  void count(const std::string& what, std::uint64_t done, std::uint64_t total);
  /// Clears the live line.
  void end_live();

  /// Seconds since `what` began, for a rate ("12.3 MiB/s").
  static std::string rate(double bytes, double seconds);

 private:
  void live(const std::string& text);  // under mu_

  Env& env_;
  std::string prefix_;
  std::mutex mu_;
  bool live_ = false;
  std::string live_what_;
  std::chrono::steady_clock::time_point live_start_{}, last_{};
  std::uint64_t reported_quarter_ = 0;  ///< plain count lines: the last quarter said
};

}  // namespace ktrain
