#include "runtime/checkpoint.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>

using namespace ktrain::launch;
namespace fs = std::filesystem;

namespace {

struct Folder {
  std::string path;
  Folder() {
    char t[] = "/tmp/ktrain-ckpt-XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    path = t;
  }
  ~Folder() { fs::remove_all(path); }
  // An entry (a folder when `dir`) written at `mtime` (seconds since the epoch).
  void add(const std::string& name, long mtime, bool dir = false) const {
    const std::string p = path + "/" + name;
    if (dir) {
      fs::create_directory(p);
    } else {
      std::ofstream(p) << "x";
    }
    utimbuf t{mtime, mtime};
    REQUIRE(::utime(p.c_str(), &t) == 0);
  }
};

}  // namespace

TEST_CASE("checkpoint: none in an empty or missing folder") {
  Folder f;
  CHECK_FALSE(latest_checkpoint(f.path).has_value());
  CHECK_FALSE(latest_checkpoint(f.path + "/missing").has_value());
  CHECK_FALSE(latest_checkpoint("").has_value());
}

TEST_CASE("checkpoint: the newest entry, leaving out hidden and unfinished ones") {
  Folder f;
  f.add("step-100", 1000, true);
  f.add("step-200.pt", 2000);
  f.add("step-300.tmp", 3000, true);
  f.add("step-300.partial", 3000);
  f.add(".step-300", 3000, true);
  auto c = latest_checkpoint(f.path + "/");
  REQUIRE(c.has_value());
  CHECK(c->path == f.path + "/step-200.pt");
  CHECK(c->mtime_unix == 2000);
  // A tie goes to the greater name.
  f.add("step-199.pt", 2000);
  f.add("step-201.pt", 2000);
  CHECK(latest_checkpoint(f.path)->path == f.path + "/step-201.pt");
}

TEST_CASE("checkpoint: a `latest` file names the checkpoint, when it names one that is there") {
  Folder f;
  f.add("global_step10", 1000, true);
  f.add("global_step20", 2000, true);
  std::ofstream(f.path + "/latest") << "global_step10\n";
  CHECK(latest_checkpoint(f.path)->path == f.path + "/global_step10");
  // One that is not there (or a path out of the folder): the newest entry instead.
  std::ofstream(f.path + "/latest") << "global_step30";
  CHECK(latest_checkpoint(f.path)->path == f.path + "/global_step20");
  std::ofstream(f.path + "/latest") << "../etc";
  CHECK(latest_checkpoint(f.path)->path == f.path + "/global_step20");
}

TEST_CASE("checkpoint: a `latest` that is no regular file is not read (a FIFO would block)") {
  Folder f;
  f.add("step-1", 100, true);
  f.add("step-2", 200, true);
  REQUIRE(::mkfifo((f.path + "/latest").c_str(), 0644) == 0);
  auto c = latest_checkpoint(f.path);  // returns: the FIFO is not waited on
  REQUIRE(c.has_value());
  CHECK(c->path == f.path + "/step-2");
  fs::remove(f.path + "/latest");
  fs::create_directory(f.path + "/latest");  // a folder named latest: the same
  c = latest_checkpoint(f.path);
  REQUIRE(c.has_value());
  CHECK(c->path == f.path + "/step-2");
}
