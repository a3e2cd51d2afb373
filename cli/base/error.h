#pragma once
// Errors that explain themselves: one type that carries the chain of
// "doing X: cause" and the exit status that the command line maps it to.

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace ktrain {

/// Exit statuses that CI scripts rely on (spec/cli.md).
namespace exit_code {
inline constexpr int kOk = 0;
inline constexpr int kFailed = 1;       ///< the job failed, or the server refused the operation
inline constexpr int kUsage = 2;        ///< bad flags or an invalid project file; nothing was sent
inline constexpr int kUnreachable = 3;  ///< cannot reach or authenticate to the API server/registry
inline constexpr int kTimeout = 124;    ///< --timeout expired while waiting
}  // namespace exit_code

/// An error with a human message and the exit status it stands for.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_status = exit_code::kFailed)
      : std::runtime_error(message), exit_status_(exit_status) {}

  /// The exit status the command line returns for this error.
  int exit_status() const { return exit_status_; }

  /// Returns a copy whose message is prefixed with `context: `.
  Error wrapped(std::string_view context) const {
    return Error(std::string(context) + ": " + what(), exit_status_);
  }

 private:
  int exit_status_;
};

/// Bad flags or bad input given by the user (exit status 2).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, exit_code::kUsage) {}
};

/// Runs `f`; an Error thrown from it is rethrown with `context: ` in front.
template <typename F>
auto with_context(std::string_view context, F&& f) -> decltype(f()) {
  try {
    return std::forward<F>(f)();
  } catch (const Error& e) {
    throw e.wrapped(context);
  }
}

}  // namespace ktrain
