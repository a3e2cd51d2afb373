#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/timefmt.h"
#include "kube/run_state.h"

using ktrain::RunState;
using nlohmann::json;

namespace {

json job(const std::string& run, json status, int nodes = 2, int gpus = 8) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", run},
            {"namespace", "ml"},
            {"creationTimestamp", "2027-01-15T07:00:00Z"},
            {"labels", {{"ktrain.dev/run", run}, {"app.kubernetes.io/managed-by", "ktrain"}}}}},
          {"spec",
           {{"parallelism", nodes},
            {"completions", nodes},
            {"template",
             {{"spec",
               {{"containers",
                 {{{"name", "train"},
                   {"image", "reg/img:1"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}}}}},
          {"status", status}};
}

json pod(const std::string& name, int index, json status,
         const std::string& created = "2027-01-15T07:00:01Z") {
  return {{"metadata",
           {{"name", name},
            {"creationTimestamp", created},
            {"labels", {{"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
          {"spec",
           {{"nodeName", "node-" + std::to_string(index)},
            {"containers", {{{"name", "train"}, {"image", "reg/img:1"}}}}}},
          {"status", status}};
}

json event(const std::string& kind, const std::string& name, const std::string& reason,
           const std::string& message) {
  return {{"involvedObject", {{"kind", kind}, {"name", name}}},
          {"reason", reason},
          {"message", message}};
}

}  // namespace

TEST_CASE("run state: job summary: name, nodes, GPUs per node, age, state") {
  auto s = ktrain::kube::summarize_job(job("r1", {{"active", 2}, {"ready", 2}}));
  CHECK(s.name == "r1");
  CHECK(s.namespace_ == "ml");
  CHECK(s.nodes == 2);
  CHECK(s.gpus == 8);
  CHECK(s.state == RunState::kRunning);
  CHECK(s.created == std::chrono::system_clock::from_time_t(1'799'996'400));

  CHECK(ktrain::kube::summarize_job(job("r", {{"active", 2}, {"ready", 0}})).state ==
        RunState::kPending);
  CHECK(ktrain::kube::summarize_job(job("r", {{"active", 1}})).state == RunState::kRunning);
  CHECK(ktrain::kube::summarize_job(job("r", json::object())).state == RunState::kPending);
  CHECK(ktrain::kube::summarize_job(
            job("r", {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}}))
            .state == RunState::kSucceeded);
  CHECK(ktrain::kube::summarize_job(
            job("r", {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}))
            .state == RunState::kFailed);
  CHECK(ktrain::kube::summarize_job(
            job("r", {{"conditions", {{{"type", "Failed"}, {"status", "False"}}}}}))
            .state == RunState::kPending);
}

TEST_CASE("run state: a dev pod's Job is of the kind dev; others are train") {
  auto j = job("box-dev", {{"active", 1}});
  CHECK(ktrain::kube::summarize_job(j).kind == "train");
  j["metadata"]["labels"]["ktrain.dev/dev"] = "true";
  CHECK(ktrain::kube::summarize_job(j).kind == "dev");
  j["metadata"]["labels"]["ktrain.dev/dev"] = "false";
  CHECK(ktrain::kube::summarize_job(j).kind == "train");
}

TEST_CASE("run state: one row per rank from the newest pod; missing ranks are NotCreated") {
  json running = json::parse(R"({"phase": "Running", "containerStatuses": [
      {"name": "train", "restartCount": 2, "state": {"running": {}}}]})");
  std::vector<json> pods = {
      pod("r-0-old", 0, {{"phase", "Failed"}}, "2027-01-15T07:00:01Z"),
      pod("r-0-new", 0, running, "2027-01-15T07:05:00Z"),
  };
  auto st = ktrain::kube::describe_run(job("r", {{"active", 1}}, 3), pods, {});
  REQUIRE(st.ranks.size() == 3);
  CHECK(st.ranks[0].pod == "r-0-new");
  CHECK(st.ranks[0].phase == "Running");
  CHECK(st.ranks[0].node == "node-0");
  CHECK(st.ranks[0].restarts == 2);
  CHECK(st.ranks[1].reason == "NotCreated");
  CHECK(st.ranks[2].phase == "Pending");
  CHECK(st.explanations.empty());
}

TEST_CASE("run state: unschedulable pods are explained with the scheduler's message") {
  const std::string msg =
      "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are "
      "available: 4 No preemption victims found for incoming pod.";
  json pending = {{"phase", "Pending"},
                  {"conditions",
                   {{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", msg}}}}};
  auto st = ktrain::kube::describe_run(job("r", {{"active", 2}, {"ready", 0}}),
                                       {pod("r-0", 0, pending), pod("r-1", 1, pending)}, {});
  REQUIRE(st.ranks.size() == 2);
  CHECK(st.ranks[0].reason == "Unschedulable");
  CHECK(st.ranks[0].message == msg);
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "ranks 0, 1 cannot be scheduled: " + msg);
}

TEST_CASE("run state: image pull errors use the event's words and name the image") {
  json waiting = {{"phase", "Pending"},
                  {"containerStatuses",
                   {{{"name", "train"},
                     {"state",
                      {{"waiting",
                        {{"reason", "ImagePullBackOff"},
                         {"message", "Back-off pulling image \"reg/img:1\""}}}}}}}}};
  std::vector<json> events = {
      event("Pod", "r-0", "Failed",
            "Failed to pull image \"reg/img:1\": rpc error: code = NotFound desc = not found"),
      event("Pod", "someone-else", "Failed", "unrelated")};
  auto st =
      ktrain::kube::describe_run(job("r", {{"active", 1}}, 1), {pod("r-0", 0, waiting)}, events);
  CHECK(st.ranks[0].reason == "ImagePullBackOff");
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0].find("rank 0 cannot pull the image reg/img:1: Failed to pull image") ==
        0);
  CHECK(st.explanations[0].find("unrelated") == std::string::npos);
}

TEST_CASE("run state: OOMKilled ranks and failed exit codes are explained") {
  json oom = {{"phase", "Failed"},
              {"containerStatuses",
               {{{"name", "train"},
                 {"state", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}}}};
  json peer = {{"phase", "Failed"},
               {"containerStatuses",
                {{{"name", "train"},
                  {"state", {{"terminated", {{"exitCode", 75}, {"reason", "Error"}}}}}}}}};
  json crash = {
      {"phase", "Failed"},
      {"containerStatuses",
       {{{"name", "train"}, {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}}}}}};
  auto failed_job = job("r",
                        {{"conditions",
                          {{{"type", "Failed"},
                            {"status", "True"},
                            {"reason", "BackoffLimitExceeded"},
                            {"message", "Job has reached the specified backoff limit"},
                            {"lastTransitionTime", "2027-01-15T07:10:00Z"}}}}},
                        3);
  auto st = ktrain::kube::describe_run(
      failed_job, {pod("r-0", 0, oom), pod("r-1", 1, peer), pod("r-2", 2, crash)}, {});
  CHECK(st.summary.state == RunState::kFailed);
  REQUIRE(st.conditions.size() == 1);
  CHECK(st.conditions[0] ==
        "Failed: BackoffLimitExceeded (Job has reached the specified backoff limit)");
  REQUIRE(st.finished);
  CHECK(st.ranks[0].exit_code == 137);
  CHECK(st.ranks[0].reason == "OOMKilled");
  REQUIRE(st.explanations.size() == 2);
  CHECK(st.explanations[0] ==
        "rank 0 ran out of memory and was killed (OOMKilled): raise train.memory or lower the "
        "batch size");
  CHECK(st.explanations[1] == "rank 2 failed with exit code 3 (Error)");

  // With a limit in the pod's spec: the limit it passed, ranks grouped by it.
  auto limited = [&](const std::string& name, int index, const std::string& limit) {
    json p = pod(name, index, oom);
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"memory", limit}}}};
    return p;
  };
  st = ktrain::kube::describe_run(
      failed_job, {limited("r-0", 0, "24Mi"), limited("r-1", 1, "24Mi"), limited("r-2", 2, "1Gi")},
      {});
  REQUIRE(st.explanations.size() == 2);
  CHECK(st.explanations[0] ==
        "ranks 0, 1 ran out of memory (limit 24Mi) and was killed (OOMKilled): raise "
        "train.memory or lower the batch size");
  CHECK(st.explanations[1].find("rank 2 ran out of memory (limit 1Gi)") == 0);
}

TEST_CASE("run state: a quota FailedCreate event on the Job explains missing pods") {
  std::vector<json> events = {
      event("Job", "r", "FailedCreate",
            "Error creating: pods \"r-0-abc\" is forbidden: exceeded quota: gpu-quota, "
            "requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=8, limited: "
            "requests.nvidia.com/gpu=8"),
      event("Job", "r", "FailedCreate",
            "Error creating: pods \"r-0-abc\" is forbidden: exceeded quota: gpu-quota, requested: "
            "requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=8, limited: "
            "requests.nvidia.com/gpu=8"),
      event("Job", "other", "FailedCreate", "not ours")};
  auto st = ktrain::kube::describe_run(job("r", json::object(), 1), {}, events);
  REQUIRE(st.ranks.size() == 1);
  CHECK(st.ranks[0].reason == "NotCreated");
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0].find("ResourceQuota is used up") != std::string::npos);
  CHECK(st.explanations[0].find("exceeded quota: gpu-quota") != std::string::npos);
}

TEST_CASE("run state: a suspended Job with a Kueue queue is explained as queued") {
  auto j = job("r", json::object(), 1);
  j["spec"]["suspend"] = true;
  j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a";
  auto st = ktrain::kube::describe_run(j, {}, {});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0].find("LocalQueue 'team-a'") != std::string::npos);
}

TEST_CASE("run state: pod rank from label or annotation") {
  json p = {{"metadata", {{"annotations", {{"batch.kubernetes.io/job-completion-index", "3"}}}}}};
  CHECK(ktrain::kube::pod_rank(p) == 3);
  CHECK(ktrain::kube::pod_rank(json{{"metadata", json::object()}}) == -1);
}

TEST_CASE("run state: a service's Deployment: replicas, readiness, a row per pod, why it waits") {
  json d = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata",
       {{"name", "web"},
        {"namespace", "ml"},
        {"creationTimestamp", "2027-01-15T07:00:00Z"},
        {"labels", {{"ktrain.dev/run", "web"}, {"app.kubernetes.io/managed-by", "ktrain"}}}}},
      {"spec",
       {{"replicas", 2},
        {"template",
         {{"spec",
           {{"containers",
             {{{"name", "serve"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}}}}},
      {"status",
       {{"readyReplicas", 1},
        {"conditions",
         {{{"type", "Available"},
           {"status", "False"},
           {"reason", "MinimumReplicasUnavailable"}}}}}}};
  auto s = ktrain::kube::summarize_deployment(d);
  CHECK(s.kind == "serve");
  CHECK(s.name == "web");
  CHECK(s.nodes == 2);
  CHECK(s.gpus == 1);
  CHECK(s.state == RunState::kPending);  // 1 of 2 ready
  auto pod = [](const std::string& name, const std::string& created, json status) {
    return json{{"metadata", {{"name", name}, {"creationTimestamp", created}}},
                {"spec", {{"nodeName", "n1"}}},
                {"status", status}};
  };
  std::vector<json> pods = {
      pod("web-b", "2027-01-15T07:00:02Z",
          {{"phase", "Pending"},
           {"containerStatuses",
            {{{"name", "serve"},
              {"restartCount", 0},
              {"state",
               {{"waiting",
                 {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image"}}}}}}}}}),
      pod("web-a", "2027-01-15T07:00:01Z",
          {{"phase", "Running"},
           {"containerStatuses",
            {{{"name", "serve"}, {"ready", true}, {"state", {{"running", json::object()}}}}}}})};
  auto st = ktrain::kube::describe_service(d, pods);
  REQUIRE(st.ranks.size() == 2);
  CHECK(st.ranks[0].pod == "web-a");  // oldest first
  CHECK(st.ranks[0].reason.empty());
  CHECK(st.ranks[1].reason == "ImagePullBackOff");
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "replica 1 cannot start: ImagePullBackOff: Back-off pulling image");
  CHECK(st.conditions == std::vector<std::string>{"Available=False: MinimumReplicasUnavailable"});
  d["status"]["readyReplicas"] = 2;
  CHECK(ktrain::kube::summarize_deployment(d).state == RunState::kRunning);
}

namespace {

json pending_unschedulable(const std::string& msg) {
  return {{"phase", "Pending"},
          {"conditions",
           {{{"type", "PodScheduled"},
             {"status", "False"},
             {"reason", "Unschedulable"},
             {"message", msg}}}}};
}

json timed_event(const std::string& pod, const std::string& reason, const std::string& message,
                 const std::string& first, const std::string& last) {
  json e = event("Pod", pod, reason, message);
  e["firstTimestamp"] = first;
  e["lastTimestamp"] = last;
  return e;
}

}  // namespace

TEST_CASE("run state: a pod waiting for the Cluster Autoscaler says which group grows, how long") {
  const std::string sched = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
  std::vector<json> events = {
      timed_event("r-0", "FailedScheduling", sched, "2027-01-15T07:00:02Z", "2027-01-15T07:03:00Z"),
      timed_event("r-0", "TriggeredScaleUp",
                  "pod triggered scale-up: [{gpu-h100-pool 1->3 (max: 8)}]", "2027-01-15T07:00:05Z",
                  "2027-01-15T07:00:05Z"),
      timed_event("r-1", "TriggeredScaleUp",
                  "pod triggered scale-up: [{gpu-h100-pool 1->3 (max: 8)}]", "2027-01-15T07:00:07Z",
                  "2027-01-15T07:00:07Z"),
  };
  const auto now = *ktrain::parse_rfc3339("2027-01-15T07:04:05Z");
  auto st = ktrain::kube::describe_run(
      job("r", {{"active", 2}}),
      {pod("r-0", 0, pending_unschedulable(sched)), pod("r-1", 1, pending_unschedulable(sched))},
      events, now);
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "ranks 0, 1 wait for a node: the Cluster Autoscaler is adding a node to group "
        "gpu-h100-pool (1 -> 3 nodes, at most 8), for 4m so far");
  CHECK(st.ranks[0].reason == "Unschedulable");
}

TEST_CASE("run state: no node group fits: the autoscaler's reasons, then the scheduler's") {
  const std::string sched = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
  const std::string no =
      "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, 1 max "
      "node group size reached";
  // An earlier scale-up that the autoscaler later gave up on: the newest answer counts.
  std::vector<json> events = {
      timed_event("r-0", "TriggeredScaleUp", "pod triggered scale-up: [{a 0->1 (max: 1)}]",
                  "2027-01-15T07:00:05Z", "2027-01-15T07:00:05Z"),
      timed_event("r-0", "NotTriggerScaleUp", no, "2027-01-15T07:02:00Z", "2027-01-15T07:05:00Z"),
  };
  auto st = ktrain::kube::describe_run(job("r", {{"active", 1}}, 1),
                                       {pod("r-0", 0, pending_unschedulable(sched))}, events,
                                       *ktrain::parse_rfc3339("2027-01-15T07:06:00Z"));
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "rank 0 cannot be scheduled, and no node group of the Cluster Autoscaler can fit it: 2 "
        "node(s) didn't match Pod's node affinity/selector, 1 max node group size reached "
        "(scheduler: " +
            sched + ")");

  // An autoscaler message of another shape is quoted as it is.
  events = {timed_event("r-0", "TriggeredScaleUp", "pod triggered scale-up: something new",
                        "2027-01-15T07:00:05Z", "2027-01-15T07:00:05Z")};
  st = ktrain::kube::describe_run(job("r", {{"active", 1}}, 1),
                                  {pod("r-0", 0, pending_unschedulable(sched))}, events,
                                  *ktrain::parse_rfc3339("2027-01-15T07:00:35Z"));
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "rank 0 waits for a node: the Cluster Autoscaler is adding nodes (pod triggered "
        "scale-up: something new), for 30s so far");
}

TEST_CASE("run state: a pod that no node's driver can run says so, from the nodes' labels") {
  const std::string msg =
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
      "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
  json pending = {{"phase", "Pending"},
                  {"conditions",
                   {{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", msg}}}}};
  json p0 = pod("r-0", 0, pending);
  p0["metadata"]["annotations"] = {{"ktrain.dev/cuda", "12.1"}};
  auto node = [](const std::string& name, const char* major, const char* minor,
                 const std::string& gpus = "8") {
    json labels = {{"kubernetes.io/hostname", name}};
    if (major) {
      labels["nvidia.com/cuda.runtime-version.major"] = major;
      labels["nvidia.com/cuda.runtime-version.minor"] = minor;
    }
    return json{{"metadata", {{"name", name}, {"labels", labels}}},
                {"status", {{"allocatable", {{"cpu", "64"}, {"nvidia.com/gpu", gpus}}}}}};
  };
  const std::vector<json> old = {node("a", "11", "4"), node("b", "11", "2"), node("c", "11", "4"),
                                 node("cpu", nullptr, nullptr, "0")};
  CHECK(ktrain::kube::waits_for_cuda_node(p0));
  CHECK_FALSE(ktrain::kube::waits_for_cuda_node(pod("r-1", 1, pending)));  // no annotation
  const std::string why =
      "no node has a driver for CUDA 12.1: nodes have 11.2, 11.4 (use nodes with a newer NVIDIA "
      "driver, or an image built for an older CUDA)";
  CHECK(ktrain::kube::cuda_unschedulable(p0, old) == why);

  auto st = ktrain::kube::describe_run(job("r", {{"active", 1}}, 1), {p0}, {},
                                       std::chrono::system_clock::now(), old);
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "rank 0 cannot be scheduled: " + why);

  // A GPU node whose driver runs it, or one GFD did not label: the reason is another.
  auto newer = old;
  newer.push_back(node("d", "12", "4"));
  CHECK(ktrain::kube::cuda_unschedulable(p0, newer).empty());
  auto unlabelled = old;
  unlabelled.push_back(node("e", nullptr, nullptr));
  CHECK(ktrain::kube::cuda_unschedulable(p0, unlabelled).empty());
  // Nodes not readable: the scheduler's words.
  st = ktrain::kube::describe_run(job("r", {{"active", 1}}, 1), {p0}, {});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "rank 0 cannot be scheduled: " + msg);
}

TEST_CASE("run state: the launcher's refusal of an old driver (exit 79) is said in its words") {
  const std::string words =
      "node gpu-7: the NVIDIA driver supports CUDA 11.2 but the image needs CUDA 12.1 "
      "(KTRAIN_CUDA_VERSION=12.1); use a node pool with a newer driver";
  json failed = {
      {"phase", "Failed"},
      {"containerStatuses",
       {{{"name", "train"},
         {"state",
          {{"terminated", {{"exitCode", 79}, {"reason", "Error"}, {"message", words + "\n"}}}}}}}}};
  auto st = ktrain::kube::describe_run(
      job("r", {{"failed", 1}, {"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}, 1),
      {pod("r-0", 0, failed)}, {});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "rank 0 failed with exit code 79: the node's NVIDIA driver is too old for the image: " +
            words);
  CHECK(st.ranks[0].exit_code == 79);
}

TEST_CASE("run state: a hung worker (exit 74) is said in the watchdog's words") {
  const std::string words =
      "rank 3 hung: no output and no heartbeat for 10m0s (watchdog timeout 10m)";
  json failed = {
      {"phase", "Failed"},
      {"containerStatuses",
       {{{"name", "train"},
         {"state",
          {{"terminated", {{"exitCode", 74}, {"reason", "Error"}, {"message", words + "\n"}}}}}}}}};
  auto st = ktrain::kube::describe_run(
      job("r", {{"failed", 1}, {"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}, 1),
      {pod("r-0", 0, failed)}, {});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "rank 0 failed with exit code 74 (the watchdog): " + words);
}

TEST_CASE("run state: the last lines in a launcher's termination message, apart from its cause") {
  json failed = {
      {"phase", "Failed"},
      {"containerStatuses",
       {{{"name", "train"},
         {"state",
          {{"terminated",
            {{"exitCode", 3},
             {"reason", "Error"},
             {"message",
              "rank 1 exited 3\nlast lines of rank 1:\nstep 9\nValueError: bad input\n"}}}}}}}}};
  auto st = ktrain::kube::describe_run(
      job("r", {{"failed", 1}, {"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}, 1),
      {pod("r-0", 0, failed)}, {});
  REQUIRE(st.ranks.size() == 1);
  CHECK(st.ranks[0].message == "rank 1 exited 3");
  CHECK(st.ranks[0].last_lines == std::vector<std::string>{"step 9", "ValueError: bad input"});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0].find("ValueError") == std::string::npos);  // the cause, one line
}

TEST_CASE("run state: a run a pod failure rule ended says so, in the Job controller's words") {
  const std::string words =
      "Container train for pod default/r-0-abcde failed with exit code 3 matching FailJob rule "
      "at index 1";
  auto st = ktrain::kube::describe_run(job("r",
                                           {{"failed", 1},
                                            {"conditions",
                                             {{{"type", "Failed"},
                                               {"status", "True"},
                                               {"reason", "PodFailurePolicy"},
                                               {"message", words}}}}},
                                           1),
                                       {}, {});
  REQUIRE(!st.explanations.empty());
  CHECK(st.explanations[0] ==
        "a pod failure rule failed the run at once, without retries (train.retry, in order, then "
        "exit 78: the launcher's configuration error): " +
            words);
}
