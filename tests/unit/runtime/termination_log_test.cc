#include "runtime/termination_log.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

using namespace ktrain::launch;

TEST_CASE("termination log: causes read like 'rank 13 exited 1' and 'rank 2 killed by SIGSEGV'") {
  CHECK(describe_exit(13, 1 << 8) == "rank 13 exited 1");
  CHECK(describe_exit(2, SIGSEGV) == "rank 2 killed by SIGSEGV");
  CHECK(exit_status_of(1 << 8) == 1);
  CHECK(exit_status_of(SIGKILL) == 137);
  CHECK(signal_name(SIGTERM) == "SIGTERM");
}

TEST_CASE("termination log: the file holds exactly the last cause") {
  std::string path = "/tmp/ktrain-termlog-" + std::to_string(::getpid());
  REQUIRE(write_termination_log(path, "a longer first cause"));
  REQUIRE(write_termination_log(path, "rank 1 exited 3"));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "rank 1 exited 3\n");
  ::unlink(path.c_str());
  CHECK_FALSE(write_termination_log("/nonexistent-dir/x", "cause"));
  CHECK_FALSE(write_termination_log("", "cause"));
}

TEST_CASE("termination log: a cause quoting a peer is written with control characters escaped") {
  std::string path = "/tmp/ktrain-termlog-esc-" + std::to_string(::getpid());
  REQUIRE(write_termination_log(path, "node 0 gave up: \x1b[2J\rgone"));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "node 0 gave up: \\x1b[2J\\x0dgone\n");
  ::unlink(path.c_str());
}
