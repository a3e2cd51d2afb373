// list_watch: what it reads of a watch stream.
#include "kube/watch.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/client.h"
#include "kube_fakes.h"

using namespace ktrain;
using kube_test::FakeProcessRunner;
using kube_test::FakeTransport;
using kube_test::TestEnv;
using nlohmann::json;

TEST_CASE("watch: an event longer than 16 MiB is an error, not buffered without end") {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  std::size_t sent = 0;
  int watches = 0;
  tr.handler = [&](const net::Request& r) {
    if (kube_test::query_param(r.url, "watch") != "1") {
      return kube_test::json_response(
          200, {{"metadata", {{"resourceVersion", "5"}}}, {"items", json::array()}});
    }
    // One event (on the first watch), then a line that never ends: 1 MiB at a time, up
    // to 64 MiB.
    r.on_headers(200, {});
    const json added = {{"type", "ADDED"},
                        {"object", {{"metadata", {{"name", "p"}, {"resourceVersion", "6"}}}}}};
    if (++watches == 1 && !r.on_data(added.dump() + "\n")) return net::Response{200};
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 64 && r.on_data(i == 0 ? "{\"type\":\"ADDED\"," + chunk : chunk); ++i) {
      sent += chunk.size();
    }
    net::Response resp;
    resp.status = 200;
    return resp;
  };
  kube::Client client(kube_test::token_config(), tr, t.env, runner);
  kube::WatchOptions opts;
  opts.max_failures = 3;
  std::vector<std::string> events;
  kube::WatchHandlers handlers;
  handlers.on_event = [&](const std::string& type, json& obj) {
    events.push_back(type + " " + obj["metadata"].value("name", ""));
  };
  CHECK_THROWS_WITH_AS(
      kube::list_watch(client, t.env, "/api/v1/namespaces/ml/pods", opts, handlers),
      "watching /api/v1/namespaces/ml/pods: an event from the API server is longer than 16 MiB "
      "(no object is that large; the server, or something between, is wrong)",
      Error);
  CHECK(events == std::vector<std::string>{"ADDED p"});
  CHECK(watches == 1);
  CHECK(sent <= std::size_t{17} << 20);  // stopped at the limit, not at the end
}

TEST_CASE("watch: events with a type or resourceVersion of the wrong type are skipped") {
  // Found while fuzzing (watch): nlohmann's value() threw type_error out of the stream.
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  int watches = 0;
  tr.handler = [&](const net::Request& r) {
    if (kube_test::query_param(r.url, "watch") != "1") {
      return kube_test::json_response(
          200, {{"metadata", {{"resourceVersion", 5}, {"continue", 1}}}, {"items", json::array()}});
    }
    ++watches;
    r.on_headers(200, {});
    r.on_data(R"({"type":5,"object":{"metadata":{"name":"a"}}})"
              "\n"
              R"({"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":6}}})"
              "\n");
    return net::Response{200};
  };
  kube::Client client(kube_test::token_config(), tr, t.env, runner);
  kube::WatchOptions opts;
  opts.max_failures = 2;
  std::vector<std::string> events;
  kube::WatchHandlers handlers;
  handlers.on_event = [&](const std::string& type, json& obj) {
    events.push_back(type + " " + obj["metadata"].value("name", ""));
    if (events.size() >= 4) watches = 100;
  };
  opts.cancelled = [&] { return watches >= 100; };
  kube::list_watch(client, t.env, "/api/v1/namespaces/ml/pods", opts, handlers);
  REQUIRE(events.size() >= 2);
  CHECK(events[0] == " a");
  CHECK(events[1] == "ADDED b");
}

TEST_CASE("watch: an API server that does not answer is tried for KTRAIN_API_GRACE, then exit 3") {
  TestEnv t;
  FakeProcessRunner runner;
  FakeTransport tr;
  int watches = 0;
  tr.handler = [&](const net::Request& r) {
    if (kube_test::query_param(r.url, "watch") != "1") {
      return kube_test::json_response(
          200, {{"metadata", {{"resourceVersion", "5"}}}, {"items", json::array()}});
    }
    ++watches;
    net::Response resp;
    resp.failure = net::TransportFailure::kConnect;
    resp.failure_message = "Failed to connect";
    return resp;
  };
  kube::Client client(kube_test::token_config(), tr, t.env, runner);
  kube::WatchOptions opts;
  opts.max_failures = 3;  // answers that are no watch; failed connections go by time
  kube::WatchHandlers handlers;
  t.env.vars["KTRAIN_API_GRACE"] = "20";
  const auto began = t.env.clock->steady_now();
  try {
    kube::list_watch(client, t.env, "/api/v1/namespaces/ml/pods", opts, handlers);
    FAIL("list_watch did not give up");
  } catch (const Error& e) {
    CHECK(e.exit_status() == exit_code::kUnreachable);
    CHECK(std::string(e.what()).find("the API server has not answered for 20s: giving up") !=
          std::string::npos);
  }
  const auto waited = t.env.clock->steady_now() - began;
  CHECK(waited >= std::chrono::seconds(20));
  CHECK(waited < std::chrono::seconds(30));
  CHECK(watches > 3);  // not max_failures: the grace period decides
}

TEST_CASE("api_grace: KTRAIN_API_GRACE seconds, default 60; a bad value is a usage error") {
  TestEnv t;
  CHECK(kube::api_grace(t.env) == std::chrono::seconds(60));
  t.env.vars["KTRAIN_API_GRACE"] = "5";
  CHECK(kube::api_grace(t.env) == std::chrono::seconds(5));
  for (const char* bad : {"0", "-3", "5s", "x"}) {
    t.env.vars["KTRAIN_API_GRACE"] = bad;
    CHECK_THROWS_AS(kube::api_grace(t.env), UsageError);
  }
}
