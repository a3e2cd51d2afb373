#include "oci/digest.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

using namespace ktrain;
using namespace ktrain::oci;
namespace fs = std::filesystem;

namespace {

/// The message of the Error that checked_digest throws for `d`.
std::string refusal(const std::string& d, int* status = nullptr) {
  try {
    checked_digest(d, "layer 2 of the manifest of reg/base:1");
  } catch (const Error& e) {
    if (status) *status = e.exit_status();
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("digest: sha256 of bytes, as sha256:<64 lower-case hex>") {
  CHECK(sha256_digest("abc") ==
        "sha256:"
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(checked_digest(sha256_digest("abc"), "x") == sha256_digest("abc"));
  CHECK(digest_hex(sha256_digest("abc"), "x") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("digest: only sha256: and exactly 64 lower-case hex digits pass") {
  const std::string hex(64, 'a');
  for (const std::string& bad : std::vector<std::string>{
           "sha256:" + std::string(63, 'a'),
           "sha256:" + std::string(65, 'a'),
           "sha256:" + std::string(64, 'A'),
           "sha256:" + std::string(63, 'a') + "g",
           "SHA256:" + hex,
           "sha256-" + hex,
           " sha256:" + hex.substr(1),
           "sha256:../../../../../../../../home/user/.bashrc" + std::string(24, '/'),
           "sha256:" + std::string(60, 'a') + "/../",
           "sha256:" + std::string(63, 'a') + '\0',
           hex,
           "",
       }) {
    int status = 0;
    const std::string m = refusal(bad, &status);
    CHECK_MESSAGE(m.find("layer 2 of the manifest of reg/base:1: ") == 0, m);
    CHECK_MESSAGE(m.find("is not a sha256 digest (expected sha256: and 64 "
                         "lower-case hex digits)") != std::string::npos,
                  m);
    CHECK(status == exit_code::kFailed);
    CHECK_THROWS_AS(digest_hex(bad, "x"), Error);
  }
  CHECK(refusal("sha256:../../x").find("'sha256:../../x'") != std::string::npos);
}

TEST_CASE("digest: another algorithm is refused as unsupported, naming the digest") {
  const std::string d = "sha512:" + std::string(128, 'b');
  CHECK(refusal(d) == "layer 2 of the manifest of reg/base:1: the digest '" + d +
                          "' uses sha512: only sha256 digests are supported");
  CHECK(refusal("blake3:" + std::string(64, 'c')).find("uses blake3") != std::string::npos);
  try {
    checked_digest(d, "the reference", exit_code::kUsage);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == exit_code::kUsage);
  }
}

TEST_CASE("digest: what a registry sent is shown escaped and cut short in messages") {
  const std::string m = refusal("sha256:\x1b[2J\x1b]0;owned\x07" + std::string(500, 'z'));
  CHECK(m.find('\x1b') == std::string::npos);
  CHECK(m.find('\x07') == std::string::npos);
  CHECK(m.find("\\x1b[2J") != std::string::npos);
  CHECK(m.find("'...") != std::string::npos);
  CHECK(m.size() < 400);
}

TEST_CASE("digest: sha256_file hashes a file and gives its size") {
  const fs::path p =
      fs::temp_directory_path() / ("ktrain-digest-test-" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << "abc";
  std::uint64_t size = 0;
  CHECK(sha256_file(p.string(), &size) == sha256_digest("abc"));
  CHECK(size == 3);
  fs::remove(p);
  CHECK_THROWS_WITH_AS(sha256_file(p.string()), doctest::Contains("cannot read"), Error);
}
