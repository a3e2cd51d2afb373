#include "oci/layer.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

using namespace ktrain::oci;
namespace fs = std::filesystem;

namespace {

struct Tree {
  fs::path root;
  Tree() {
    root = fs::temp_directory_path() /
           ("ktrain-layer-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
    fs::create_directories(root / "ctx" / "src");
    fs::create_directories(root / "out");
    write("ctx/train.py", "print(1)\n");
    write("ctx/src/model.py", "class M: pass\n");
    write("ctx/notes.tmp", "x");
    fs::create_symlink("train.py", root / "ctx" / "link.py");
  }
  ~Tree() { fs::remove_all(root); }
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

}  // namespace

TEST_CASE("layer: walk order is sorted and ignore rules apply") {
  Tree t;
  std::vector<std::string> seen;
  walk_context(t.source(), [&](const ContextEntry& e) { seen.push_back(e.rel); });
  CHECK(seen == std::vector<std::string>{"link.py", "src", "src/model.py", "train.py"});
}

TEST_CASE("layer: the same folder gives the same digest; the cache is used when unchanged") {
  Tree t;
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
  Tree t;
  LayerSource s = t.source();
  s.ignore.add("*");
  CHECK_THROWS_WITH_AS(make_layer(s, t.options(false), "the context"),
                       doctest::Contains("empty once the ignore rules are applied"), ktrain::Error);
}

TEST_CASE("layer: the modification time setting changes the digest") {
  Tree t;
  LayerOptions o = t.options(false);
  std::string d0 = make_layer(t.source(), o, "ctx").digest;
  o.mtime = 1700000000;
  CHECK(make_layer(t.source(), o, "ctx").digest != d0);
}

TEST_CASE("layer: indexed_digest names the cached layer only while the folder is unchanged") {
  Tree t;
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
