#pragma once
// Reading a small file whole, for the launcher: /etc/hosts and resolv.conf, /proc files
// of a hung worker, the checkpoint folder's `latest`. No iostreams (they would pull the
// C++ locale machinery into the static launcher and its GPU helper).

#include <cstddef>
#include <optional>
#include <string>

namespace ktrain::launch {

/// The content of the regular file `path`, at most `max` bytes; nullopt when it cannot
/// be opened or read, or is not a regular file. It is opened without blocking, so that
/// a FIFO in its place never holds the caller.
std::optional<std::string> read_regular_file(const std::string& path,
                                             std::size_t max = std::size_t{1} << 20);

}  // namespace ktrain::launch
