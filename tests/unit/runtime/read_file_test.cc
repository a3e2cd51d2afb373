#include "runtime/read_file.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using ktrain::launch::read_regular_file;
namespace fs = std::filesystem;

TEST_CASE("read_regular_file: a regular file whole or up to max; nothing else, without waiting") {
  char t[] = "/tmp/ktrain-read-XXXXXX";
  REQUIRE(::mkdtemp(t) != nullptr);
  const std::string dir = t;
  std::ofstream(dir + "/f") << "step-10\nmore\n";
  CHECK(read_regular_file(dir + "/f") == "step-10\nmore\n");
  CHECK(read_regular_file(dir + "/f", 4) == "step");
  std::ofstream(dir + "/empty");
  CHECK(read_regular_file(dir + "/empty") == "");
  CHECK_FALSE(read_regular_file(dir + "/missing"));
  CHECK_FALSE(read_regular_file(dir));  // a folder
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0644) == 0);
  CHECK_FALSE(read_regular_file(dir + "/fifo"));  // returns: no writer is waited for
  fs::remove_all(dir);
}
