#pragma once
// The one-line cause of the container's end, where Kubernetes shows it
// (terminationMessagePath, /dev/termination-log) and `ktrain status` reads it.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ktrain::launch {

/// Writes `cause` (through printable(): it may quote a peer) and a newline to
/// `path`, replacing its content. The default
/// /dev/termination-log is only written when it exists (inside a container);
/// another path is created. Returns false when the write failed.
bool write_termination_log(const std::string& path, const std::string& cause);

/// The same, then "last lines of <who>:" and `tail` (the failed rank's last output lines,
/// each through printable()), the oldest left out to keep the whole within 4000 bytes
/// (the kubelet keeps 4096 of a container's message).
bool write_termination_log(const std::string& path, const std::string& cause,
                           const std::string& who, const std::vector<std::string>& tail);

/// The header line before the last lines in a termination message.
inline constexpr char kLastLinesOf[] = "last lines of ";

/// The last lines of a worker's output, at most `max` of at most kMaxTailLine bytes.
class LastLines {
 public:
  static constexpr std::size_t kMaxTailLine = 240;
  explicit LastLines(std::size_t max = 10) : max_(max) {}
  void add(std::string_view line);
  const std::vector<std::string>& lines() const { return lines_; }
  std::size_t capacity() const { return max_; }

 private:
  std::size_t max_;
  std::vector<std::string> lines_;  // oldest first
};

/// Returns "rank 3 exited 1" or "rank 3 killed by SIGSEGV" for a wait status.
std::string describe_exit(int rank, int wait_status);
/// The same for `who` ("node 1").
std::string describe_exit(const std::string& who, int wait_status);

/// Returns the launcher exit status that stands for a worker's wait status:
/// its exit code, or 128 + the signal that killed it.
int exit_status_of(int wait_status);

/// Returns "SIGTERM" etc. for a signal number ("signal 42" when unnamed).
std::string signal_name(int sig);

}  // namespace ktrain::launch
