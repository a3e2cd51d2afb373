#pragma once
// Content digests ("sha256:<hex>"), computed while data streams past, and checked
// strictly wherever one comes from outside (a registry, a file, the user).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"

namespace ktrain::oci {

/// An incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  /// Adds `data` to the hash.
  void update(std::string_view data);
  /// Returns "sha256:<64 hex digits>"; the object is done afterwards.
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// "sha256:<hex>" of `data`.
std::string sha256_digest(std::string_view data);

/// Checks that `digest` is "sha256:" and exactly 64 lower-case hex digits (the OCI
/// image spec's form of sha256, the one algorithm ktrain supports) and returns it
/// unchanged. Otherwise throws Error with `exit_status`, naming the digest (quoted,
/// unprintable bytes escaped) after `where` it came from ("layer 2 of the manifest of
/// X"): another algorithm (sha512) is refused as unsupported, anything else as malformed.
const std::string& checked_digest(const std::string& digest, std::string_view where,
                                  int exit_status = exit_code::kFailed);

/// The 64 hex digits of `digest`, checked as checked_digest does. The only way to get
/// them, so that no digest becomes part of a file name unchecked.
std::string digest_hex(const std::string& digest, std::string_view where);

/// The digest of the file at `path` and its size (when `size` is given); throws Error
/// when it cannot be read.
std::string sha256_file(const std::string& path, std::uint64_t* size = nullptr);

}  // namespace ktrain::oci
