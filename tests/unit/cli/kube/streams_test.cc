// The exit status of `ktrain exec` from the error channel's metav1.Status, as the API
// server and the kubelet write it.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/streams.h"

using ktrain::kube::exec_status_code;
using nlohmann::json;

TEST_CASE("exec: Success is exit status 0") {
  std::string msg = "stale";
  auto code = exec_status_code(json{{"metadata", json::object()}, {"status", "Success"}}, msg);
  REQUIRE(code);
  CHECK(*code == 0);
  CHECK(msg.empty());
}

TEST_CASE("exec: NonZeroExitCode gives the command's exit status from its ExitCode cause") {
  json st = json::parse(R"({"metadata":{},"status":"Failure",
    "message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
    "reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}})");
  std::string msg;
  auto code = exec_status_code(st, msg);
  REQUIRE(code);
  CHECK(*code == 3);
  CHECK(msg.empty());
  st["details"]["causes"][0]["message"] = "137";
  CHECK(*exec_status_code(st, msg) == 137);
}

TEST_CASE("exec: a failure without an exit code keeps the server's words") {
  std::string msg;
  json st = {{"status", "Failure"},
             {"reason", "InternalError"},
             {"message",
              "Internal error occurred: error executing command in container: "
              "exec: \"nosuch\": executable file not found in $PATH"}};
  CHECK_FALSE(exec_status_code(st, msg));
  CHECK(msg == st["message"].get<std::string>());
}

TEST_CASE("exec: a malformed ExitCode is not taken as a status") {
  std::string msg;
  for (const char* bad : {"x", "", "256", "-1", "3a"}) {
    json st = {
        {"status", "Failure"},
        {"reason", "NonZeroExitCode"},
        {"message", "m"},
        {"details", {{"causes", json::array({{{"reason", "ExitCode"}, {"message", bad}}})}}}};
    CAPTURE(bad);
    CHECK_FALSE(exec_status_code(st, msg));
    CHECK(msg == "m");
  }
  CHECK_FALSE(exec_status_code(json::array(), msg));
  CHECK(msg == "the exit status sent by the server is not a Status object");
  CHECK_FALSE(exec_status_code(json{{"status", "Failure"}}, msg));
  CHECK(msg == "the command failed (status Failure)");
}
