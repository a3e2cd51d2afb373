#include "base/progress.h"

#include <cstdio>
#include <ostream>
#include <utility>

namespace ktrain {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string Progress::rate(double bytes, double seconds) {
  if (seconds <= 0) return "";
  return human_bytes(bytes / seconds) + "/s";
}

Progress::Progress(Env& env, std::string prefix) : env_(env), prefix_(std::move(prefix)) {}

Progress::~Progress() {
  end_live();
}

void Progress::step(const std::string& line) {
  if (env_.global.quiet) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (live_) *env_.err << "\r\033[K";
  live_ = false;
  live_what_.clear();
  *env_.err << prefix_ << ": " << line << "\n";
  env_.err->flush();
}

void Progress::live(const std::string& text) {
  *env_.err << "\r\033[K  " << text;
  env_.err->flush();
  live_ = true;
}

void Progress::bytes(const std::string& what, std::uint64_t n) {
  if (env_.global.quiet || !env_.err_is_terminal) return;
  std::lock_guard<std::mutex> lk(mu_);
  auto now = env_.clock->steady_now();
  if (what != live_what_) {
    if (live_) *env_.err << "\r\033[K";
    live_what_ = what;
    live_start_ = now;
  } else if (now - last_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_ = now;
  const double secs = std::chrono::duration<double>(now - live_start_).count();
  live(what + "  " + human_bytes(static_cast<double>(n)) + "  " +
       rate(static_cast<double>(n), secs));
}

void Progress::count(const std::string& what, std::uint64_t done, std::uint64_t total) {
  if (env_.global.quiet || total == 0) return;
  std::lock_guard<std::mutex> lk(mu_);
  auto now = env_.clock->steady_now();
  if (what != live_what_) {
    live_what_ = what;
    live_start_ = now;
    reported_quarter_ = 0;
  }
  const double secs = std::chrono::duration<double>(now - live_start_).count();
  std::string text = std::to_string(done) + " of " + std::to_string(total) + " " + what;
  if (secs >= 1 && done > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.0f/s)", static_cast<double>(done) / secs);
    text += buf;
  }
  if (env_.err_is_terminal) {
    if (live_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    live(text);
    return;
  }
  // Piped: a line at each quarter, and at the end.
  const std::uint64_t quarter = done * 4 / total;
  if (quarter <= reported_quarter_ && done < total) return;
  if (done >= total && reported_quarter_ >= 4) return;
  reported_quarter_ = done >= total ? 4 : quarter;
  *env_.err << prefix_ << ": " << text << "\n";
  env_.err->flush();
}

void Progress::end_live() {
  std::lock_guard<std::mutex> lk(mu_);
  if (live_) {
    *env_.err << "\r\033[K";
    env_.err->flush();
  }
  live_ = false;
  live_what_.clear();
}

}  // namespace ktrain
