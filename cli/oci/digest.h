#pragma once
// Content digests ("sha256:<hex>"), computed while data streams past.

#include <memory>
#include <string>
#include <string_view>

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

/// The hex part of "sha256:<hex>"; throws Error when `digest` is not a sha256 digest.
std::string digest_hex(const std::string& digest);

}  // namespace ktrain::oci
