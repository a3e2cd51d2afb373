#include "oci/digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/dynlib.h"
#include "base/error.h"

namespace ktrain::oci {

namespace {

/// OpenSSL's SHA-256 (SHA-NI and AVX where the CPU has them), loaded when a digest is
/// first needed: only `build` hashes, and the other verbs do not pay for loading and
/// relocating libcrypto when ktrain starts.
struct Crypto {
  EVP_MD_CTX* (*md_ctx_new)() = nullptr;
  void (*md_ctx_free)(EVP_MD_CTX*) = nullptr;
  const EVP_MD* (*sha256)() = nullptr;
  int (*digest_init_ex)(EVP_MD_CTX*, const EVP_MD*, ENGINE*) = nullptr;
  int (*digest_update)(EVP_MD_CTX*, const void*, size_t) = nullptr;
  int (*digest_final_ex)(EVP_MD_CTX*, unsigned char*, unsigned int*) = nullptr;
};

const Crypto& crypto() {
  return load_library_once<Crypto>("libcrypto.so.3",
                                   "needed for SHA-256: install libssl3 (OpenSSL 3)",
                                   [](DynamicLibrary& dl, Crypto& c) {
                                     dl.bind(c.md_ctx_new, "EVP_MD_CTX_new");
                                     dl.bind(c.md_ctx_free, "EVP_MD_CTX_free");
                                     dl.bind(c.sha256, "EVP_sha256");
                                     dl.bind(c.digest_init_ex, "EVP_DigestInit_ex");
                                     dl.bind(c.digest_update, "EVP_DigestUpdate");
                                     dl.bind(c.digest_final_ex, "EVP_DigestFinal_ex");
                                   });
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  const Crypto& c = crypto();
  impl_->ctx = c.md_ctx_new();
  if (!impl_->ctx || c.digest_init_ex(impl_->ctx, c.sha256(), nullptr) != 1) {
    throw Error("SHA-256: OpenSSL could not start a digest");
  }
}

Sha256::~Sha256() {
  crypto().md_ctx_free(impl_->ctx);
}

void Sha256::update(std::string_view data) {
  crypto().digest_update(impl_->ctx, data.data(), data.size());
}

std::string Sha256::finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  crypto().digest_final_ex(impl_->ctx, md, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_digest(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.finish();
}

namespace {

constexpr std::size_t kShownMax = 140;

/// `s` quoted for a message: unprintable bytes as \xNN, cut after kShownMax bytes, so
/// that what a registry sends cannot drive the terminal or flood it.
std::string shown(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < kShownMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += s.size() > kShownMax ? "'..." : "'";
  return out;
}

bool is_lower_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

const std::string& checked_digest(const std::string& digest, std::string_view where,
                                  int exit_status) {
  constexpr std::string_view kPrefix = "sha256:";
  const std::string_view d = digest;
  if (d.size() == kPrefix.size() + 64 && d.substr(0, kPrefix.size()) == kPrefix &&
      is_lower_hex(d.substr(kPrefix.size()))) {
    return digest;
  }
  const std::string context = where.empty() ? std::string() : std::string(where) + ": ";
  const std::size_t colon = d.find(':');
  const std::string_view algorithm = colon == std::string_view::npos ? "" : d.substr(0, colon);
  if (!algorithm.empty() && algorithm != "sha256" &&
      algorithm.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+._-") ==
          std::string_view::npos) {
    throw Error(context + "the digest " + shown(d) + " uses " + std::string(algorithm) +
                    ": only sha256 digests are supported",
                exit_status);
  }
  throw Error(context + shown(d) +
                  " is not a sha256 digest (expected sha256: and 64 lower-case hex digits)",
              exit_status);
}

std::string digest_hex(const std::string& digest, std::string_view where) {
  return checked_digest(digest, where).substr(7);
}

std::string sha256_file(const std::string& path, std::uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  Sha256 h;
  std::uint64_t total = 0;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error("cannot read '" + path + "': " + std::strerror(err));
    }
    if (n == 0) break;
    h.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    total += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  if (size) *size = total;
  return h.finish();
}

}  // namespace ktrain::oci
