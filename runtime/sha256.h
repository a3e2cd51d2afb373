#pragma once
// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), small enough to keep the
// launcher a static binary without libcrypto.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ktrain::launch {

/// A SHA-256 digest.
using Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  /// Adds bytes to the message.
  void update(std::string_view data);
  /// Finishes the message and returns its digest; the object is spent afterwards.
  Digest finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

/// Returns SHA-256(data).
Digest sha256(std::string_view data);

/// Returns HMAC-SHA256(key, message).
Digest hmac_sha256(std::string_view key, std::string_view message);

/// Returns the lower-case hex of `bytes`.
std::string to_hex(std::string_view bytes);

/// Returns the lower-case hex of a digest.
std::string to_hex(const Digest& d);

/// Decodes hex into bytes; returns false when `hex` is not valid hex.
bool from_hex(std::string_view hex, std::string& out);

/// Compares two strings in time independent of where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

/// Returns `n` random bytes from /dev/urandom (getrandom).
std::string random_bytes(size_t n);

}  // namespace ktrain::launch
