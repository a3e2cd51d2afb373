#include "oci/sync.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

using namespace ktrain::oci;
namespace fs = std::filesystem;

namespace {

ContextEntry file(const std::string& rel, std::uint64_t size, std::int64_t mtime,
                  std::uint32_t mode = 0644) {
  ContextEntry e;
  e.rel = rel;
  e.type = ContextEntry::Type::kFile;
  e.size = size;
  e.mtime_ns = mtime;
  e.inode = 7;
  e.mode = mode;
  return e;
}

ContextEntry dir(const std::string& rel, std::uint32_t mode = 0755, std::int64_t mtime = 1) {
  ContextEntry e;
  e.rel = rel;
  e.type = ContextEntry::Type::kDirectory;
  e.mode = mode;
  e.mtime_ns = mtime;
  return e;
}

ContextEntry slink(const std::string& rel, const std::string& to) {
  ContextEntry e;
  e.rel = rel;
  e.type = ContextEntry::Type::kSymlink;
  e.mode = 0777;
  e.link = to;
  return e;
}

Tree tree(std::initializer_list<ContextEntry> entries) {
  Tree t;
  for (const auto& e : entries) t.emplace(e.rel, e);
  return t;
}

}  // namespace

TEST_CASE("diff_trees: an unchanged tree has no difference, whatever its folders' times") {
  const Tree a = tree({dir("src", 0755, 1), file("src/a.py", 10, 5), file("train.py", 3, 5)});
  Tree b = a;
  b["src"].mtime_ns = 99;  // a folder's time changes with what it holds
  b["src"].size = 4096;
  const TreeDelta d = diff_trees(a, b);
  CHECK(d.empty());
  CHECK(d.bytes == 0);
}

TEST_CASE("diff_trees: a file whose size, time, inode or mode changed is sent; others are not") {
  const Tree a = tree(
      {file("a", 10, 5), file("b", 10, 5), file("c", 10, 5), file("d", 10, 5), file("e", 10, 5)});
  Tree b = a;
  b["a"].size = 11;
  b["b"].mtime_ns = 6;
  b["c"].inode = 8;  // replaced by a rename (an editor's save)
  b["d"].mode = 0755;
  const TreeDelta d = diff_trees(a, b);
  CHECK(d.changed == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(d.removed.empty());
  CHECK(d.bytes == 11 + 10 + 10 + 10);
}

TEST_CASE("diff_trees: new entries come in path order, a folder before what it holds") {
  const Tree a = tree({file("train.py", 1, 1)});
  const Tree b = tree({file("train.py", 1, 1), dir("new"), file("new/x.py", 2, 1), dir("new/sub"),
                       slink("new/sub/l", "../x.py"), file("new-file", 3, 1)});
  const TreeDelta d = diff_trees(a, b);
  CHECK(d.changed ==
        std::vector<std::string>{"new", "new-file", "new/sub", "new/sub/l", "new/x.py"});
}

TEST_CASE("diff_trees: a link whose target changed is sent; a folder only when its mode did") {
  const Tree a = tree({slink("l", "a"), dir("d", 0755)});
  const Tree b = tree({slink("l", "b"), dir("d", 0700)});
  CHECK(diff_trees(a, b).changed == std::vector<std::string>{"d", "l"});
}

TEST_CASE("diff_trees: one whiteout for a removed folder, none for what it held") {
  const Tree a =
      tree({dir("gone"), dir("gone/deep"), file("gone/deep/x", 1, 1), file("old.txt", 1, 1),
            dir("src"), file("src/keep.py", 1, 1), file("src/drop.py", 1, 1)});
  const Tree b = tree({dir("src"), file("src/keep.py", 1, 1)});
  const TreeDelta d = diff_trees(a, b);
  CHECK(d.changed.empty());
  CHECK(d.removed == std::vector<std::string>{"gone", "old.txt", "src/drop.py"});
}

TEST_CASE("diff_trees: a folder that became a file replaces it: no whiteout for what it held") {
  const Tree a = tree({dir("x"), file("x/a", 1, 1), file("x/b", 1, 1)});
  const Tree b = tree({file("x", 5, 2)});
  const TreeDelta d = diff_trees(a, b);
  CHECK(d.changed == std::vector<std::string>{"x"});
  CHECK(d.removed.empty());
}

TEST_CASE("diff_trees: from nothing (what the image holds is unknown), everything is sent") {
  const Tree b = tree({dir("src"), file("src/a.py", 4, 1), file("train.py", 6, 1)});
  const TreeDelta d = diff_trees({}, b);
  CHECK(d.changed == std::vector<std::string>{"src", "src/a.py", "train.py"});
  CHECK(d.bytes == 10);
}

TEST_CASE("whiteout_of: .wh. before the last name") {
  CHECK(whiteout_of("old.txt") == ".wh.old.txt");
  CHECK(whiteout_of("src/drop.py") == "src/.wh.drop.py");
  CHECK(whiteout_of("a/b/c") == "a/b/.wh.c");
}

TEST_CASE("a tree survives its JSON, and bad JSON is an error naming it") {
  const Tree t =
      tree({dir("src", 0750, 3), file("src/a b.py", 123456789012, -5, 0600), slink("l", "../x")});
  const Tree back = tree_from_json(tree_to_json(t), "t");
  REQUIRE(back.size() == 3);
  CHECK(diff_trees(t, back).empty());
  CHECK(diff_trees(back, t).empty());
  CHECK(back.at("src/a b.py").size == 123456789012);
  CHECK(back.at("src/a b.py").mtime_ns == -5);
  CHECK(back.at("l").link == "../x");
  CHECK_THROWS_WITH_AS(tree_from_json("{\"version\": 1, \"entries\": [[1]]}", "the tree of X"),
                       doctest::Contains("the tree of X"), ktrain::Error);
  CHECK_THROWS_WITH_AS(tree_from_json("{\"version\": 2, \"entries\": []}", "the tree of X"),
                       doctest::Contains("unknown version"), ktrain::Error);
  CHECK_THROWS_AS(
      tree_from_json("{\"version\": 1, \"entries\": [[\"a\", 9, 0, 0, 0, 0, \"\"]]}", "t"),
      ktrain::Error);
}

TEST_CASE("remember_tree and recalled_tree: by image digest, the newest 64 kept") {
  const fs::path cache =
      fs::temp_directory_path() / ("ktrain-sync-test-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const Tree t = tree({file("train.py", 1, 1)});
  auto digest = [](int i) {
    std::string hex = std::to_string(i);
    return "sha256:" + std::string(64 - hex.size(), '0') + hex;
  };
  CHECK_FALSE(recalled_tree(cache.string(), digest(1)).has_value());
  CHECK_FALSE(recalled_tree("", digest(1)).has_value());
  for (int i = 0; i < 70; ++i) {
    remember_tree(cache.string(), digest(i), t);
    // Distinct times, oldest first.
    fs::last_write_time(cache / "trees" / (digest(i).substr(7) + ".json"),
                        fs::file_time_type::clock::now() - std::chrono::hours(100 - i));
  }
  remember_tree(cache.string(), digest(70), t);
  std::size_t kept = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache / "trees")) ++kept;
  CHECK(kept == 64);
  CHECK_FALSE(recalled_tree(cache.string(), digest(0)).has_value());
  auto r = recalled_tree(cache.string(), digest(70));
  REQUIRE(r.has_value());
  CHECK(diff_trees(t, *r).empty());
  // A damaged file reads as unknown (the next sync sends the whole workspace).
  std::ofstream(cache / "trees" / (digest(70).substr(7) + ".json")) << "{";
  CHECK_FALSE(recalled_tree(cache.string(), digest(70)).has_value());
  fs::remove_all(cache);
}

TEST_CASE("drop_paths: a path goes with what is below it, and nothing that only shares its start") {
  Tree t = tree({dir("cache"), file("cache/a.bin", 1, 1), dir("cache/deep"),
                 file("cache/deep/b", 1, 1), file("cache.py", 1, 1), dir("src"),
                 file("src/run.log", 1, 1), file("src/m.py", 1, 1), file("train.py", 1, 1)});
  CHECK(drop_paths(t, {"cache", "src/run.log", "not/there"}) == 5);
  std::vector<std::string> left;
  for (const auto& [rel, e] : t) left.push_back(rel);
  CHECK(left == std::vector<std::string>{"cache.py", "src", "src/m.py", "train.py"});
  CHECK(drop_paths(t, {}) == 0);
  CHECK(t.size() == 4);
}

TEST_CASE("git_ignored paths kept out of both trees: not sent, and not removed from the image") {
  // The image holds out.log (the build took it); git ignores it: a sync leaves it be.
  Tree before = tree({file("out.log", 5, 1), file("train.py", 3, 1)});
  Tree now = tree({file("out.log", 9, 2), file("train.py", 4, 2), file("new.log", 1, 2)});
  const std::vector<std::string> ignored = {"out.log", "new.log"};
  drop_paths(before, ignored);
  drop_paths(now, ignored);
  const TreeDelta d = diff_trees(before, now);
  CHECK(d.changed == std::vector<std::string>{"train.py"});
  CHECK(d.removed.empty());
}
