#pragma once
// Blob files written safely: the bytes go to a new temporary file beside the target,
// are checked against the blob's size and digest, and only then take the target's
// name. A blob that does not match leaves nothing behind.

#include <cstdint>
#include <string>
#include <string_view>

#include "oci/digest.h"
#include "oci/registry.h"

namespace ktrain::oci {

/// A blob being written to `path`. The bytes go to a new file in the same folder
/// (created exclusively under a fresh name: never through an existing file or link),
/// hashed as they go; commit() checks their size and digest and renames the file to
/// `path`. Destroyed without a successful commit(), it removes its file.
class BlobFile {
 public:
  /// `digest` must pass checked_digest; `mode` is the new file's (before the umask).
  /// Throws Error when the file cannot be created.
  BlobFile(std::string path, std::string digest, std::uint64_t size, unsigned mode = 0644);
  ~BlobFile();
  BlobFile(const BlobFile&) = delete;
  BlobFile& operator=(const BlobFile&) = delete;

  /// Appends bytes. Throws Error when they go beyond `size`, or cannot be written.
  void write(std::string_view data);
  /// Checks the size and digest of what was written and renames the file to `path`.
  /// Throws Error naming `what` (and the digest) when they do not match; the file is
  /// removed.
  void commit(const std::string& what);
  /// The temporary file's path.
  const std::string& temp_path() const { return temp_; }

 private:
  void discard();

  std::string path_;
  std::string digest_;
  std::uint64_t size_;
  std::string temp_;
  int fd_ = -1;
  Sha256 hash_;
  std::uint64_t written_ = 0;
  bool committed_ = false;
};

/// Downloads blob `digest` of `size` bytes from `repo` into `path` through a BlobFile:
/// `path` appears only once the bytes are verified.
void download_blob_file(RegistryClient& client, const Repo& repo, const std::string& digest,
                        std::uint64_t size, const std::string& path, unsigned mode = 0644);

/// Copies the blob file at `from` (digest `digest`, `size` bytes) to `path` through a
/// BlobFile, so that a blob changed on disk is refused rather than copied.
void copy_blob_file(const std::string& from, const std::string& digest, std::uint64_t size,
                    const std::string& path, unsigned mode = 0644);

}  // namespace ktrain::oci
