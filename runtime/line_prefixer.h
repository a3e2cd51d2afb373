#pragma once
// Cuts a worker's output into whole lines and prefixes each with its rank, so
// that lines from many workers interleave but are never torn.

#include <string>
#include <string_view>

namespace ktrain::launch {

/// A line longer than this is written in pieces, each but the last ending in
/// the continuation mark.
inline constexpr size_t kMaxLine = 64 * 1024;

/// Marks a piece of an over-long line that continues on the next output line.
inline constexpr std::string_view kContinuationMark = "\\";

/// Buffers one output stream of one worker.
class LinePrefixer {
 public:
  /// `prefix` starts every output line, e.g. "[rank 3] "; `cap` bounds a partial line.
  explicit LinePrefixer(std::string prefix, size_t cap = kMaxLine)
      : prefix_(std::move(prefix)), cap_(cap) {}

  /// Adds bytes; appends every completed line, prefixed, to `out`.
  void feed(std::string_view data, std::string& out);
  /// Appends the partial line, if any, as a complete line (end of stream).
  void flush(std::string& out);
  /// Bytes of the partial line held back.
  size_t pending() const { return partial_.size(); }

 private:
  std::string prefix_;
  size_t cap_;
  std::string partial_;
};

}  // namespace ktrain::launch
