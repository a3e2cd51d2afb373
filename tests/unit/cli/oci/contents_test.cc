#include "oci/contents.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace ktrain;
namespace fs = std::filesystem;

namespace {

struct GitTree {
  fs::path root;
  Env env;
  GitTree() {
    char tmpl[] = "/tmp/ktrain-contents-XXXXXX";
    root = ::mkdtemp(tmpl);
    env.vars["PATH"] = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  }
  ~GitTree() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text = "x\n") const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  int sh(const std::string& cmd) const {
    return std::system(("cd '" + root.string() + "' && " + cmd + " >/dev/null 2>&1").c_str());
  }
};

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("git_ignored: untracked ignored paths, an ignored folder as one; tracked files never") {
  GitTree t;
  if (t.sh("git --version") != 0) {
    MESSAGE("git is not installed: skipped");
    return;
  }
  CHECK_FALSE(oci::git_ignored(t.env, t.root.string()).has_value());  // not a work tree yet
  REQUIRE(t.sh("git init -q .") == 0);
  t.write(".gitignore", "*.log\ncache/\n");
  t.write("train.py");
  t.write("run.log");
  t.write("kept.log");
  t.write("cache/a.bin");
  t.write("cache/deep/b.bin");
  t.write("src/m.py");
  t.write("src/debug.log");
  REQUIRE(t.sh("git add -f kept.log") == 0);  // tracked, though *.log is ignored
  auto all = oci::git_ignored(t.env, t.root.string());
  REQUIRE(all.has_value());
  CHECK(sorted(*all) == std::vector<std::string>{"cache", "run.log", "src/debug.log"});
  // From a folder of the work tree: relative to that folder, only what is below it.
  auto sub = oci::git_ignored(t.env, (t.root / "src").string());
  REQUIRE(sub.has_value());
  CHECK(*sub == std::vector<std::string>{"debug.log"});
}
