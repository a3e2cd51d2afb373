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

}  // namespace ktrain::backend
