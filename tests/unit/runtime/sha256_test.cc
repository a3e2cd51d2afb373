#include "runtime/sha256.h"

#include <doctest/doctest.h>

using namespace ktrain::launch;

namespace {
std::string unhex(const std::string& h) {
  std::string out;
  REQUIRE(from_hex(h, out));
  return out;
}
}  // namespace

TEST_CASE("sha256: FIPS 180-4 examples") {
  CHECK(to_hex(sha256("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(to_hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Fed in pieces that straddle the 64-byte blocks: same digest.
  std::string million(1000000, 'a');
  Sha256 s;
  for (size_t i = 0; i < million.size(); i += 999)
    s.update(std::string_view(million).substr(i, 999));
  CHECK(to_hex(s.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("hmac-sha256: RFC 4231 test vectors") {
  struct Case {
    std::string key, data, mac;
  };
  const Case cases[] = {
      {unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {unhex("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::string(131, '\xaa'),
       "This is a test using a larger than block-size key and a larger than block-size data. "
       "The key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const auto& c : cases) CHECK(to_hex(hmac_sha256(c.key, c.data)) == c.mac);
  // Test case 5: truncated to 128 bits.
  CHECK(
      to_hex(hmac_sha256(unhex("0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c"), "Test With Truncation"))
          .substr(0, 32) == "a3b6167473100ee06e0c796c2955552b");
}

TEST_CASE("hex: round trip and bad input") {
  std::string out;
  CHECK(from_hex("00ff7f", out));
  CHECK(out == std::string("\x00\xff\x7f", 3));
  CHECK(to_hex(out) == "00ff7f");
  CHECK_FALSE(from_hex("abc", out));
  CHECK_FALSE(from_hex("zz", out));
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
  CHECK(random_bytes(16).size() == 16);
  CHECK(random_bytes(16) != random_bytes(16));
}
