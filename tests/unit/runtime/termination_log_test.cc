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

TEST_CASE(
    "termination log: the failed rank's last lines after the cause, the newest within 4000 bytes") {
  std::string path = "/tmp/ktrain-termlog-tail-" + std::to_string(::getpid());
  REQUIRE(write_termination_log(path, "rank 2 exited 1", "rank 2",
                                {"Traceback (most recent call last):", "ValueError: \x1b[31mbad"}));
  auto read = [&] {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  CHECK(read() ==
        "rank 2 exited 1\nlast lines of rank 2:\nTraceback (most recent call last):\n"
        "ValueError: \\x1b[31mbad\n");
  // Many long lines: the oldest go, the whole stays within 4000 bytes.
  std::vector<std::string> many;
  for (int i = 0; i < 100; ++i) many.push_back("line " + std::to_string(i) + std::string(200, 'x'));
  REQUIRE(write_termination_log(path, "rank 0 exited 3", "rank 0", many));
  const std::string text = read();
  CHECK(text.size() <= 4000);
  CHECK(text.rfind("rank 0 exited 3\nlast lines of rank 0:\n", 0) == 0);
  CHECK(text.find("line 99") != std::string::npos);
  CHECK(text.find("line 80x") == std::string::npos);
  // No lines: the cause alone, as before.
  REQUIRE(write_termination_log(path, "rank 1 exited 3", "rank 1", {}));
  CHECK(read() == "rank 1 exited 3\n");
  ::unlink(path.c_str());
}

TEST_CASE("LastLines: the newest N, each cut at kMaxTailLine bytes") {
  LastLines t(3);
  for (int i = 0; i < 5; ++i) t.add("l" + std::to_string(i));
  CHECK(t.lines() == std::vector<std::string>{"l2", "l3", "l4"});
  t.add(std::string(1000, 'y'));
  CHECK(t.lines().back().size() == LastLines::kMaxTailLine);
}
