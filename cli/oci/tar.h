#pragma once
// Deterministic tar streams for image layers: entries in a fixed order, owners 0:0
// without names, one fixed modification time, no setuid or setgid bits, PAX headers
// for long names and large sizes. The same input always gives the same bytes.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ktrain::oci {

/// Where tar bytes go.
using ByteSink = std::function<void(std::string_view)>;

/// Writes a tar stream (POSIX ustar + PAX extensions) to a sink.
class TarWriter {
 public:
  /// `mtime` is written as every entry's modification time (seconds since the epoch).
  TarWriter(ByteSink sink, std::int64_t mtime);

  /// A directory entry ("a/b/"; the trailing '/' is added). `mode`: permission bits
  /// (setuid and setgid are dropped, here as for files).
  void add_directory(const std::string& path, std::uint32_t mode);
  /// A regular file whose `size` bytes are read from open file descriptor `fd`.
  /// Throws Error when the file is shorter or longer than `size` while being read.
  void add_file_from_fd(const std::string& path, std::uint32_t mode, std::uint64_t size, int fd);
  /// A regular file with `content`.
  void add_file(const std::string& path, std::uint32_t mode, std::string_view content);
  /// A symbolic link to `target`.
  void add_symlink(const std::string& path, const std::string& target);
  /// Ends the archive (two zero blocks). Nothing may be added afterwards.
  void finish();

 private:
  void header(const std::string& path, char type, std::uint32_t mode, std::uint64_t size,
              const std::string& link);
  void pad(std::uint64_t size);

  ByteSink sink_;
  std::int64_t mtime_;
};

}  // namespace ktrain::oci
