#include "kube/run_events.h"

#include <doctest/doctest.h>

#include "base/timefmt.h"

using namespace ktrain;
using nlohmann::json;

namespace {

json core_event(const std::string& kind, const std::string& name, const std::string& reason,
                const std::string& message, const std::string& last, int count = 1) {
  return {{"involvedObject", {{"kind", kind}, {"name", name}}},
          {"reason", reason},
          {"message", message},
          {"type", reason == "Scheduled" ? "Normal" : "Warning"},
          {"source", {{"component", "kubelet"}}},
          {"firstTimestamp", "2026-01-01T00:00:00Z"},
          {"lastTimestamp", last},
          {"count", count}};
}

}  // namespace

TEST_CASE("run_events: oldest first by when last seen, with count, object and source") {
  // The scheduler's events (events.k8s.io) have no lastTimestamp: eventTime and series.
  json sched = {{"involvedObject", {{"kind", "Pod"}, {"name", "r-a-0-x"}}},
                {"reason", "FailedScheduling"},
                {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."},
                {"type", "Warning"},
                {"reportingComponent", "default-scheduler"},
                {"eventTime", "2026-01-01T00:00:05.000000Z"},
                {"series", {{"count", 4}, {"lastObservedTime", "2026-01-01T00:05:00.000000Z"}}},
                {"firstTimestamp", nullptr},
                {"lastTimestamp", nullptr}};
  const auto ev = kube::run_events(
      {core_event("Pod", "r-a-0-x", "BackOff", "Back-off restarting failed container",
                  "2026-01-01T00:09:00Z", 7),
       sched,
       core_event("Job", "r-a", "SuccessfulCreate", "Created pod: r-a-0-x",
                  "2026-01-01T00:00:01Z")});
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].reason == "SuccessfulCreate");
  CHECK(ev[0].object == "job/r-a");
  CHECK(ev[0].meaning.empty());
  CHECK(ev[1].reason == "FailedScheduling");
  CHECK(ev[1].source == "default-scheduler");
  CHECK(ev[1].count == 4);
  CHECK(format_rfc3339(*ev[1].last) == "2026-01-01T00:05:00Z");
  CHECK(ev[1].meaning.find("no node has the GPUs free") == 0);
  CHECK(ev[2].reason == "BackOff");
  CHECK(ev[2].count == 7);
  CHECK(ev[2].object == "pod/r-a-0-x");
  CHECK(ev[2].meaning.find("the container keeps failing") == 0);
}

TEST_CASE("event_meaning: the reasons that matter, told apart by their words") {
  using kube::event_meaning;
  CHECK(event_meaning("FailedScheduling", "0/2 nodes are available: 2 Insufficient memory.")
            .find("CPU or memory") != std::string::npos);
  CHECK(
      event_meaning("FailedScheduling",
                    "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
          .find("placement") != std::string::npos);
  CHECK(
      event_meaning("FailedScheduling", "0/1 nodes are available: 1 node(s) had untolerated taint")
          .find("taint") != std::string::npos);
  CHECK(event_meaning("Failed", "Failed to pull image \"x\": manifest unknown")
            .find("does not exist") != std::string::npos);
  CHECK(
      event_meaning("Failed", "Failed to pull image \"x\": 401 Unauthorized").find("credentials") !=
      std::string::npos);
  CHECK(event_meaning("Failed", "Error: container has runAsNonRoot").empty());
  CHECK(event_meaning("BackOff", "Back-off pulling image \"x\"").find("cannot be pulled") !=
        std::string::npos);
  CHECK(event_meaning("Preempted", "Preempted by pod abc on node n1").find("higher priority") !=
        std::string::npos);
  CHECK(event_meaning("NotTriggerScaleUp", "pod didn't trigger scale-up").find("Autoscaler") !=
        std::string::npos);
  CHECK(event_meaning("FailedCreate", "pods \"x\" is forbidden: exceeded quota: gpus")
            .find("ResourceQuota") != std::string::npos);
  CHECK(event_meaning("FailedCreate", "something else").find("cannot create") != std::string::npos);
  CHECK(event_meaning("OOMKilling", "Memory cgroup out of memory").find("memory limit") !=
        std::string::npos);
  CHECK(event_meaning("PodFailurePolicy", "").find("train.retry") != std::string::npos);
  CHECK(event_meaning("Scheduled", "Successfully assigned").empty());
  CHECK(event_meaning("Pulled", "Container image already present").empty());
}
