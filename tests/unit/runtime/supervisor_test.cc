#include "runtime/supervisor.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace ktrain::launch;

namespace {

// Records what the supervisor told the other nodes; its one fd turns readable
// when the test wants a peer failure to arrive.
class FakePeers : public PeerLink {
 public:
  FakePeers() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_) == 0); }
  ~FakePeers() override {
    ::close(sv_[0]);
    ::close(sv_[1]);
  }
  void peer_fails(const std::string& cause) {
    cause_ = cause;
    REQUIRE(::write(sv_[1], "x", 1) == 1);
  }
  std::vector<int> fds() const override { return {sv_[0]}; }
  std::optional<std::string> on_readable(int) override {
    char c;
    if (::read(sv_[0], &c, 1) == 1) return cause_;
    return std::nullopt;
  }
  void local_failed(const std::string& cause) override { failed.push_back(cause); }
  void local_done() override { ++done; }
  bool all_done() const override { return done > 0; }

  std::vector<std::string> failed;
  int done = 0;

 private:
  int sv_[2];
  std::string cause_;
};

WorkerSpec sh(int rank, const std::string& script) {
  WorkerSpec w;
  w.rank = rank;
  w.local_rank = rank;
  w.argv = {"/bin/sh", "-c", script};
  w.env = {{"KTRAIN_RANK", std::to_string(rank)}};
  return w;
}

struct Run {
  Outcome outcome;
  std::string output;
};

Run supervise(const std::vector<WorkerSpec>& workers, PeerLink& peers, double grace = 30,
              double watchdog = 0, const std::string& stop_file = "") {
  char path[] = "/tmp/ktrain-sup-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ProcessSpawner spawner;
  Supervisor s(spawner, fd, grace, 0);
  s.set_watchdog(watchdog);
  s.set_stop_file(stop_file);
  Run r;
  r.outcome = s.run(workers, peers);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  ::unlink(path);
  return r;
}

}  // namespace

TEST_CASE("supervisor: workers that succeed; every output line is prefixed with its rank") {
  FakePeers peers;
  Run r = supervise(
      {sh(0, "echo out $KTRAIN_RANK; echo err >&2"), sh(1, "printf 'no newline'"), sh(2, "exit 0")},
      peers);
  CHECK(r.outcome.status == 0);
  CHECK(r.outcome.cause.empty());
  CHECK(peers.done == 1);
  CHECK(peers.failed.empty());
  CHECK(r.output.find("[rank 0] out 0\n") != std::string::npos);
  CHECK(r.output.find("[rank 0] err\n") != std::string::npos);
  CHECK(r.output.find("[rank 1] no newline\n") != std::string::npos);
}

TEST_CASE("supervisor: the first failure stops the others and tells the peers") {
  FakePeers peers;
  Run r = supervise({sh(0, "sleep 30"), sh(1, "exit 3"), sh(2, "sleep 30")}, peers);
  CHECK(r.outcome.status == 3);
  CHECK(r.outcome.cause == "rank 1 exited 3");
  REQUIRE(peers.failed.size() == 1);
  CHECK(peers.failed[0] == "rank 1 exited 3");
  CHECK(peers.done == 0);
}

TEST_CASE(
    "supervisor: the failed rank's last output lines (stdout and stderr) come with the cause") {
  FakePeers peers;
  Run r = supervise({sh(0, "sleep 30"),
                     sh(1, "for i in $(seq 1 15); do echo step $i; done; echo boom >&2; exit 3")},
                    peers);
  CHECK(r.outcome.cause == "rank 1 exited 3");
  CHECK(r.outcome.tail_of == "rank 1");
  REQUIRE(r.outcome.tail.size() == 10);
  CHECK(r.outcome.tail.front() == "step 7");
  CHECK(r.outcome.tail.back() == "boom");
  // A node that succeeds keeps none.
  FakePeers ok_peers;
  CHECK(supervise({sh(0, "echo fine")}, ok_peers).outcome.tail.empty());
}

TEST_CASE("supervisor: a worker killed by a signal gives 128+signal") {
  FakePeers peers;
  Run r = supervise({sh(4, "kill -SEGV $$"), sh(5, "sleep 30")}, peers);
  CHECK(r.outcome.status == 128 + 11);
  CHECK(r.outcome.cause == "rank 4 killed by SIGSEGV");
}

TEST_CASE("supervisor: a peer's failure stops this node with 75, SIGKILL after the grace") {
  FakePeers peers;
  peers.peer_fails("rank 9 exited 1");
  // The second worker ignores SIGTERM: only the SIGKILL after the grace ends it.
  Run r = supervise({sh(0, "sleep 30"), sh(1, "trap '' TERM; echo ready; sleep 30; sleep 30")},
                    peers, 0.3);
  CHECK(r.outcome.status == 75);
  CHECK(r.outcome.cause == "stopped because of a peer: rank 9 exited 1");
  CHECK(peers.failed.empty());  // the peer already knows
}

TEST_CASE("supervisor: a command that cannot be run fails its rank with 127") {
  FakePeers peers;
  WorkerSpec w;
  w.rank = 0;
  w.argv = {"/nonexistent/train"};
  Run r = supervise({w}, peers);
  CHECK(r.outcome.status == 127);
  CHECK(r.outcome.cause == "rank 0 exited 127");
  CHECK(r.output.find("[rank 0] ktrain-launch: cannot run '/nonexistent/train'") !=
        std::string::npos);
}

TEST_CASE("supervisor: heavy concurrent output stays in whole lines") {
  FakePeers peers;
  std::vector<WorkerSpec> ws;
  for (int i = 0; i < 4; ++i) {
    // 2000 lines of 300 characters each, written in odd-sized chunks by dd.
    ws.push_back(sh(i,
                    "i=0; while [ $i -lt 2000 ]; do printf 'L%04d' $i; "
                    "printf '%0295d\\n' 7; i=$((i+1)); done | dd bs=997 2>/dev/null"));
  }
  Run r = supervise(ws, peers);
  CHECK(r.outcome.status == 0);
  std::istringstream in(r.output);
  std::string line;
  int lines = 0;
  std::set<std::string> seen;
  bool all_whole = true;
  while (std::getline(in, line)) {
    ++lines;
    // "[rank N] L0000" + 295 digits
    bool ok =
        line.size() == 9 + 300 && line.rfind("[rank ", 0) == 0 && line[8] == ' ' && line[9] == 'L';
    if (!ok) all_whole = false;
    seen.insert(line.substr(0, 14));
  }
  CHECK(all_whole);
  CHECK(lines == 8000);
  CHECK(seen.size() == 8000);
}

TEST_CASE("supervisor: the watchdog ends a worker with no output and no heartbeat (74)") {
  FakePeers peers;
  char dir[] = "/tmp/ktrain-hb-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string hb = std::string(dir) + "/heartbeat.1";
  // Rank 0 prints now and then, rank 1 only touches its heartbeat file, rank 2 is silent
  // after its first line: rank 2 is the hung one, whatever the order of the checks.
  WorkerSpec quiet =
      sh(1, "i=0; while [ $i -lt 60 ]; do touch \"$HB\"; sleep 0.1; i=$((i+1)); done");
  quiet.env.push_back({"HB", hb});
  quiet.heartbeat_file = hb;
  Run r =
      supervise({sh(0, "i=0; while [ $i -lt 60 ]; do echo step $i; sleep 0.1; i=$((i+1)); done"),
                 quiet, sh(2, "echo loading; exec sleep 30")},
                peers, 5, 2.0);
  CHECK(r.outcome.status == 74);
  CHECK(r.outcome.cause.rfind("rank 2 hung: no output and no heartbeat for ", 0) == 0);
  CHECK(r.outcome.cause.find("(watchdog timeout 2s)") != std::string::npos);
  REQUIRE(peers.failed.size() == 1);
  CHECK(peers.failed[0] == r.outcome.cause);
  CHECK(r.output.find("[rank 2] loading\n") != std::string::npos);
  ::unlink(hb.c_str());
  ::rmdir(dir);
}

TEST_CASE("supervisor: with the watchdog on, workers that show progress run to the end") {
  FakePeers peers;
  char dir[] = "/tmp/ktrain-hb-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string hb = std::string(dir) + "/heartbeat.1";
  WorkerSpec quiet =
      sh(1, "i=0; while [ $i -lt 30 ]; do touch \"$HB\"; sleep 0.1; i=$((i+1)); done");
  quiet.env.push_back({"HB", hb});
  quiet.heartbeat_file = hb;
  Run r = supervise(
      {sh(0, "i=0; while [ $i -lt 30 ]; do echo step $i; sleep 0.1; i=$((i+1)); done"), quiet},
      peers, 5, 2.0);
  CHECK(r.outcome.status == 0);
  CHECK(r.outcome.cause.empty());
  CHECK(peers.done == 1);
  ::unlink(hb.c_str());
  ::rmdir(dir);
}

TEST_CASE("supervisor: a stop makes the stop file before the workers get SIGTERM") {
  FakePeers peers;
  char dir[] = "/tmp/ktrain-stop-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string stop = std::string(dir) + "/stop";
  WorkerSpec w =
      sh(0, "trap 'cat \"$STOP\" || echo no stop file; exit 0' TERM; while :; do sleep 0.05; done");
  w.env.push_back({"STOP", stop});
  // Rank 1 fails once rank 0 has its trap: the node stops.
  Run r = supervise({w, sh(1, "sleep 0.5; exit 3")}, peers, 5, 0, stop);
  CHECK(r.outcome.status == 3);
  CHECK(r.output.find("[rank 0] stopping (SIGTERM): SIGKILL in 5s\n") != std::string::npos);
  ::unlink(stop.c_str());
  ::rmdir(dir);
}
