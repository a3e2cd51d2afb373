#include "oci/digest.h"

#include <openssl/evp.h>

#include <string>

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

std::string digest_hex(const std::string& digest) {
  if (digest.size() != 71 || digest.compare(0, 7, "sha256:") != 0) {
    throw Error("'" + digest + "' is not a sha256 digest");
  }
  return digest.substr(7);
}

}  // namespace ktrain::oci
