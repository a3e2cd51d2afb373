#include "oci/layer.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"

using namespace ktrain::oci;
namespace fs = std::filesystem;

namespace {

struct FileTree {
  fs::path root;
  FileTree() {
    root = fs::temp_directory_path() /
           ("ktrain-layer-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
    fs::create_directories(root / "ctx" / "src");
    fs::create_directories(root / "out");
    write("ctx/train.py", "print(1)\n");
    write("ctx/src/model.py", "class M: pass\n");
    write("ctx/notes.tmp", "x");
    fs::create_symlink("train.py", root / "ctx" / "link.py");
  }
  ~FileTree() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(root / rel) << text; }
  LayerSource source() const {
    LayerSource s;
    s.root = (root / "ctx").string();
    s.prefix = "workspace";
    s.ignore.add("*.tmp");
    return s;
  }
  LayerOptions options(bool cache) const {
    LayerOptions o;
    o.temp_dir = (root / "out").string();
    if (cache) o.cache_dir = (root / "cache").string();
    o.threads = 2;
    return o;
  }
};

std::uint32_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string gunzip(const std::string& in) {
  std::string out;
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[65536];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // the next gzip member
      continue;
    }
    REQUIRE(rc == Z_OK);
  }
  inflateEnd(&z);
  return out;
}

/// Each entry's name and mode field (octal text) in a tar stream.
std::map<std::string, std::string> tar_modes(const std::string& tar) {
  std::map<std::string, std::string> out;
  for (std::size_t off = 0; off + 512 <= tar.size();) {
    const std::string name = tar.substr(off, 100).c_str();
    if (name.empty()) break;
    out[name] = tar.substr(off + 100, 7);
    const std::uint64_t size = std::stoull(tar.substr(off + 124, 11), nullptr, 8);
    off += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

}  // namespace

TEST_CASE("layer: walk order is sorted and ignore rules apply") {
  FileTree t;
  std::vector<std::string> seen;
  walk_context(t.source(), [&](const ContextEntry& e) { seen.push_back(e.rel); });
  CHECK(seen == std::vector<std::string>{"link.py", "src", "src/model.py", "train.py"});
}

TEST_CASE("layer: the same folder gives the same digest; the cache is used when unchanged") {
  FileTree t;
  LayerBlob a = make_layer(t.source(), t.options(false), "ctx");
  LayerBlob b = make_layer(t.source(), t.options(false), "ctx");
  CHECK(a.digest == b.digest);
  CHECK(a.diff_id == b.diff_id);
  CHECK(a.size == fs::file_size(a.path));
  CHECK(a.media_type == "application/vnd.oci.image.layer.v1.tar+gzip");

  LayerBlob c1 = make_layer(t.source(), t.options(true), "ctx");
  CHECK_FALSE(c1.from_cache);
  CHECK(c1.digest == a.digest);
  LayerBlob c2 = make_layer(t.source(), t.options(true), "ctx");
  CHECK(c2.from_cache);
  CHECK(c2.digest == a.digest);

  t.write("ctx/train.py", "print(2)\n");
  LayerBlob c3 = make_layer(t.source(), t.options(true), "ctx");
  CHECK_FALSE(c3.from_cache);
  CHECK(c3.digest != a.digest);
  CHECK_FALSE(fs::exists(c1.path));  // the folder's old blob left the cache
}

TEST_CASE("layer: ignoring everything is an error that says so") {
  FileTree t;
  LayerSource s = t.source();
  s.ignore.add("*");
  CHECK_THROWS_WITH_AS(make_layer(s, t.options(false), "the context"),
                       doctest::Contains("empty once the ignore rules are applied"), ktrain::Error);
}

TEST_CASE("layer: the modification time setting changes the digest") {
  FileTree t;
  LayerOptions o = t.options(false);
  std::string d0 = make_layer(t.source(), o, "ctx").digest;
  o.mtime = 1700000000;
  CHECK(make_layer(t.source(), o, "ctx").digest != d0);
}

TEST_CASE("layer: indexed_digest names the cached layer only while the folder is unchanged") {
  FileTree t;
  const std::string cache = (t.root / "cache").string();
  CHECK_FALSE(indexed_digest(t.source(), t.options(true), cache).has_value());  // no entry
  LayerBlob b = make_layer(t.source(), t.options(true), "ctx");
  REQUIRE(indexed_digest(t.source(), t.options(true), cache) == b.digest);
  fs::remove(b.path);  // the entry still says what the folder makes, blob or not
  CHECK(indexed_digest(t.source(), t.options(true), cache) == b.digest);

  t.write("ctx/src/model.py", "class M: x = 1\n");
  CHECK_FALSE(indexed_digest(t.source(), t.options(true), cache).has_value());  // changed

  make_layer(t.source(), t.options(true), "ctx");
  for (const auto& e : fs::directory_iterator(t.root / "cache" / "index")) {
    std::ofstream(e.path()) << "{ not json";  // a damaged entry is no answer, not an error
  }
  CHECK_FALSE(indexed_digest(t.source(), t.options(true), cache).has_value());
}

TEST_CASE("layer: the cache is private: its folders are 0700, its files 0600") {
  FileTree t;
  LayerBlob b = make_layer(t.source(), t.options(true), "ctx");
  const fs::path cache = t.root / "cache";
  CHECK(mode_of(cache) == 0700);
  CHECK(mode_of(cache / "index") == 0700);
  CHECK(mode_of(cache / "blobs") == 0700);
  CHECK(mode_of(cache / "blobs" / "sha256") == 0700);
  CHECK(mode_of(b.path) == 0600);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(cache / "index")) {
    CHECK(mode_of(e.path()) == 0600);
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("layer: a cache left open to others is narrowed to 0700") {
  FileTree t;
  const fs::path cache = t.root / "cache";
  fs::create_directories(cache / "blobs" / "sha256");
  fs::create_directories(cache / "index");
  for (const fs::path& p : {cache, cache / "blobs", cache / "blobs" / "sha256", cache / "index"}) {
    fs::permissions(p, fs::perms(0777));
  }
  make_layer(t.source(), t.options(true), "ctx");
  for (const fs::path& p : {cache, cache / "blobs", cache / "blobs" / "sha256", cache / "index"}) {
    CHECK(mode_of(p) == 0700);
  }
}

TEST_CASE("layer: setuid and setgid bits of workspace files do not reach the layer") {
  FileTree t;
  fs::permissions(t.root / "ctx" / "train.py", fs::perms(04755));
  fs::permissions(t.root / "ctx" / "src", fs::perms(02755));
  REQUIRE(mode_of(t.root / "ctx" / "train.py") == 04755);
  LayerBlob b = make_layer(t.source(), t.options(false), "ctx");
  const auto modes = tar_modes(gunzip(read_all(b.path)));
  REQUIRE(modes.count("workspace/train.py") == 1);
  CHECK(modes.at("workspace/train.py") == "0000755");
  REQUIRE(modes.count("workspace/src/") == 1);
  CHECK(modes.at("workspace/src/") == "0000755");
}
