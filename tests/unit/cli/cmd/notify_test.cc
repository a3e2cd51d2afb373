#include "cmd/notify.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace ktrain;
using namespace ktrain::cmd;

namespace {

RankStatus rank(int index, std::optional<int> code) {
  RankStatus r;
  r.index = index;
  r.exit_code = code;
  return r;
}

RunStatus ended(RunState state, std::vector<RankStatus> ranks, int first_failed = -1) {
  RunStatus st;
  st.summary.name = "r-a";
  st.summary.namespace_ = "team";
  st.summary.state = state;
  st.ranks = std::move(ranks);
  st.first_failed = first_failed;
  return st;
}

}  // namespace

TEST_CASE("notify: a run's exit code") {
  CHECK(run_exit_code(ended(RunState::kSucceeded, {rank(0, 0)})) == 0);
  // The rank that failed first.
  CHECK(run_exit_code(ended(RunState::kFailed, {rank(0, 75), rank(1, 137)}, 1)) == 137);
  // Without it: a rank's own failure before a peer-stopped one's 75.
  CHECK(run_exit_code(ended(RunState::kFailed, {rank(0, 75), rank(1, 3)})) == 3);
  CHECK(run_exit_code(ended(RunState::kFailed, {rank(0, 75), rank(1, std::nullopt)})) == 75);
  // Nothing known (a deadline, a pod that never started): 1.
  CHECK(run_exit_code(ended(RunState::kFailed, {rank(0, std::nullopt)})) == 1);
  CHECK(run_exit_code(ended(RunState::kFailed, {})) == 1);
}

TEST_CASE("notify: the webhook's JSON says the run, its state and exit code, and why") {
  auto st = ended(RunState::kFailed, {rank(0, 74)}, 0);
  st.explanations = {"rank 0 failed with exit code 74 (the watchdog): rank 3 hung"};
  const auto j = nlohmann::json::parse(notify_payload(st));
  CHECK(j["run"] == "r-a");
  CHECK(j["namespace"] == "team");
  CHECK(j["state"] == "Failed");
  CHECK(j["exitCode"] == 74);
  CHECK(j["text"] ==
        "ktrain: run r-a (namespace team) Failed, exit code 74: rank 0 failed with exit code 74 "
        "(the watchdog): rank 3 hung");
  const auto ok = nlohmann::json::parse(notify_payload(ended(RunState::kSucceeded, {})));
  CHECK(ok["text"] == "ktrain: run r-a (namespace team) succeeded");
  CHECK(ok["exitCode"] == 0);
}
