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

std::string compress(Compression c, const std::string& in, unsigned threads,
                     GzipEngine engine = GzipEngine::kAuto) {
  std::string out;
  auto z = make_compressor(
      c, [&](std::string_view d) { out.append(d); }, threads, engine);
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

namespace {

/// Half text, half random bytes, in runs of a few hundred KiB: blocks of both kinds,
/// and blocks that change kind in the middle.
std::string mixed(size_t n) {
  std::mt19937 rng(7);
  std::string s;
  s.reserve(n);
  while (s.size() < n) {
    const size_t run = 200000 + rng() % 300000;
    const bool random = rng() % 2;
    for (size_t i = 0; i < run && s.size() < n; ++i) {
      s += static_cast<char>(random ? rng() % 256 : "the quick brown fox "[i % 20]);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("compress: each gzip engine makes a valid stream, the same for any thread count") {
  const std::string in = mixed(6 * (1 << 20) + 999);
  std::vector<GzipEngine> engines = {GzipEngine::kLibdeflate};
  if (gzip_engine_available(GzipEngine::kIsal)) {
    engines.push_back(GzipEngine::kIsal);
  } else {
    MESSAGE("libisal.so.2 is not installed: only libdeflate is checked");
  }
  std::vector<std::string> outs;
  for (GzipEngine e : engines) {
    CAPTURE(static_cast<int>(e));
    const std::string gz = compress(Compression::kGzip, in, 1, e);
    CHECK(gunzip_all(gz) == in);
    // The text shrinks; random data is stored, and so is the rest of a block that
    // starts random.
    CHECK(gz.size() < in.size() * 85 / 100);
    CHECK(gz.size() > in.size() / 2);
    CHECK(compress(Compression::kGzip, in, 3, e) == gz);
    outs.push_back(gz);
  }
  if (outs.size() == 2) {
    CHECK(outs[0] != outs[1]);                              // two engines really ran
    CHECK(compress(Compression::kGzip, in, 2) == outs[1]);  // ISA-L when installed
  }
}

TEST_CASE("compress: random data is stored, not searched") {
  std::mt19937 rng(3);
  std::string in(3 * (1 << 20), '\0');
  for (char& c : in) c = static_cast<char>(rng());
  for (GzipEngine e : {GzipEngine::kLibdeflate, GzipEngine::kIsal}) {
    if (!gzip_engine_available(e)) continue;
    const std::string gz = compress(Compression::kGzip, in, 2, e);
    CHECK(gunzip_all(gz) == in);
    // Stored blocks: 5 bytes per 64 KiB, 18 per member.
    CHECK(gz.size() <= in.size() + in.size() / 65535 * 5 + 3 * 40);
  }
}
