#include "oci/compress.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <random>
#include <string>

using namespace ktrain::oci;

namespace {

/// Decompresses a gzip stream of one or more members.
std::string gunzip_all(const std::string& in) {
  std::string out;
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[65536];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // the next member
      continue;
    }
    REQUIRE(rc == Z_OK);
  }
  inflateEnd(&z);
  return out;
}

std::string sample(size_t n) {
  std::mt19937 rng(1);
  std::string s;
  s.reserve(n);
  for (size_t i = 0; i < n; ++i) s += static_cast<char>(i % 3 == 0 ? rng() % 256 : 'a' + i % 7);
  return s;
}

std::string compress(Compression c, const std::string& in, unsigned threads) {
  std::string out;
  auto z = make_compressor(
      c, [&](std::string_view d) { out.append(d); }, threads);
  for (size_t i = 0; i < in.size(); i += 100000) z->write(std::string_view(in).substr(i, 100000));
  z->finish();
  return out;
}

}  // namespace

TEST_CASE("compress: parallel gzip members form one stream that decompresses whole") {
  const std::string in = sample(3 * (1 << 20) + 12345);
  const std::string gz = compress(Compression::kGzip, in, 2);
  CHECK(gz.size() < in.size());
  CHECK(gunzip_all(gz) == in);
}

TEST_CASE("compress: gzip output does not depend on the number of threads") {
  const std::string in = sample(2 * (1 << 20) + 7);
  CHECK(compress(Compression::kGzip, in, 1) == compress(Compression::kGzip, in, 4));
}

TEST_CASE("compress: empty input is still a valid gzip stream") {
  const std::string gz = compress(Compression::kGzip, "", 2);
  CHECK(gz.size() > 10);
  CHECK(gunzip_all(gz).empty());
}

TEST_CASE("compress: zstd output is deterministic across thread counts") {
  const std::string in = sample(1 << 20);
  const std::string a = compress(Compression::kZstd, in, 1);
  CHECK(a == compress(Compression::kZstd, in, 3));
  CHECK(a.substr(0, 4) == std::string("\x28\xb5\x2f\xfd", 4));  // zstd magic
}
