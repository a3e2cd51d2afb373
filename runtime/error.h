#pragma once
// The launcher's own error type and exit statuses (no dependency on cli/).

#include <stdexcept>
#include <string>
#include <string_view>

namespace ktrain::launch {

/// Exit statuses of ktrain-launch (man/ktrain-launch.1, EXIT STATUS). A failing
/// local worker's own status (128+signal when killed) is passed through as is.
namespace exit_status {
inline constexpr int kOk = 0;
inline constexpr int kHung = 74;        ///< a worker made no progress for the watchdog's timeout
inline constexpr int kPeerFailed = 75;  ///< stopped because another worker or node failed
inline constexpr int kRendezvous = 76;  ///< rendezvous failed: timeout, refused secret, bad world
inline constexpr int kPreflight = 77;   ///< GPU/NCCL preflight failed, or GPUs asked for but absent
inline constexpr int kConfig = 78;      ///< bad or missing configuration, no command
inline constexpr int kCudaDriver = 79;  ///< the node's driver is too old for the image's CUDA
}  // namespace exit_status

/// An error with a one-line human message and the launcher exit status it maps to.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}

  /// The exit status the launcher returns for this error.
  int status() const { return status_; }

 private:
  int status_;
};

/// Throws LaunchError(kConfig, message).
[[noreturn]] void config_error(const std::string& message);

/// Returns "what: strerror(errno)" for the current errno.
std::string errno_message(const std::string& what);

/// Returns `text` with what a terminal would act on escaped as \xNN: the C0 controls
/// (ESC, CR, BEL, NUL, newline, tab, ...), DEL, the C1 controls (raw or UTF-8) and
/// bytes that are not UTF-8. Printable UTF-8 and backslashes are kept.
std::string printable(std::string_view text);

/// Writes "ktrain-launch: <message>\n" to stderr in one write, with the message
/// passed through printable(): messages may quote what peers sent.
void log_line(const std::string& message);

}  // namespace ktrain::launch
