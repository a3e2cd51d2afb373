#pragma once
// The longest log line ktrain passes on whole. A container may write a line of any
// length (a progress bar without newlines, a dumped tensor); one of gigabytes would
// otherwise be kept whole before it is printed.

#include <cstddef>
#include <string>
#include <string_view>

namespace ktrain::backend {

/// Log lines (the kubelet's timestamp included) longer than this are cut: 1 MiB.
inline constexpr std::size_t kMaxLogLineBytes = std::size_t{1} << 20;

/// What a cut line ends with, after its first kMaxLogLineBytes; the rest is dropped.
inline constexpr std::string_view kLineCutMark = " [ktrain: line cut at 1 MiB]";

/// Makes `head`, the first kMaxLogLineBytes (or fewer) of a longer line, the line to
/// print: drops a UTF-8 character cut in two at its end and appends kLineCutMark.
void mark_cut_line(std::string& head);

/// `line`, or when it is longer than kMaxLogLineBytes, its cut form (mark_cut_line).
std::string_view cut_long_line(std::string_view line, std::string& storage);

/// Cuts one connection's log stream into lines as its chunks come. A line passes on
/// straight from its chunk when it can, else from a buffer; a line longer than
/// kMaxLogLineBytes passes on cut (mark_cut_line) and the rest of it is dropped.
class LineFramer {
 public:
  /// Takes one chunk; calls `line(std::string_view)` for each line it completes (without
  /// its "\n"). `line` returns false to stop; then so does feed.
  template <typename F>
  bool feed(std::string_view data, F&& line) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = data.find('\n', start)) != std::string_view::npos; start = nl + 1) {
      if (!piece(data.substr(start, nl - start), true, line)) return false;
    }
    return start == data.size() || piece(data.substr(start), false, line);
  }
  /// The line not ended by "\n" yet (to pass on when the stream has ended for good).
  const std::string& rest() const { return partial_; }
  /// Whether a line has been passed on.
  bool progressed() const { return progressed_; }

 private:
  /// A buffer this large is kept between lines; a larger one is given back.
  static constexpr std::size_t kKeptLineBytes = 4096;

  // One piece of a line, up to its "\n" (`ended`) or the end of the chunk.
  template <typename F>
  bool piece(std::string_view piece, bool ended, F& line) {
    if (cutting_) {
      cutting_ = !ended;
      return true;
    }
    if (piece.size() > kMaxLogLineBytes - partial_.size()) {
      partial_.append(piece.substr(0, kMaxLogLineBytes - partial_.size()));
      mark_cut_line(partial_);
      cutting_ = !ended;
    } else if (!ended) {
      partial_.append(piece);
      return true;
    } else if (partial_.empty()) {
      progressed_ = true;
      return line(piece);
    } else {
      partial_.append(piece);
    }
    progressed_ = true;
    const bool ok = line(std::string_view(partial_));
    partial_.clear();
    if (partial_.capacity() > kKeptLineBytes) partial_.shrink_to_fit();
    return ok;
  }

  std::string partial_;   // the line in progress
  bool cutting_ = false;  // the line in progress was passed on cut: its rest is dropped
  bool progressed_ = false;
};

}  // namespace ktrain::backend
