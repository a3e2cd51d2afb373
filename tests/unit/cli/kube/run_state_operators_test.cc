// list's summary of the operators' objects: size, GPUs and state from their own
// conditions and status.

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/run_state.h"

using ktrain::RunState;
using ktrain::kube::summarize_operator;
using nlohmann::json;

namespace {
json cond(const char* type, const char* status = "True") {
  return {{"type", type}, {"status", status}};
}
json meta(const char* name) {
  return {{"name", name},
          {"namespace", "ml"},
          {"labels", {{"ktrain.dev/run", name}, {"ktrain.dev/sweep", "sw"}}}};
}
}  // namespace

TEST_CASE("run state: a JobSet's nodes and state") {
  json js = {
      {"kind", "JobSet"},
      {"metadata", meta("js")},
      {"spec",
       {{"replicatedJobs", json::array({{{"name", "node"},
                                         {"replicas", 1},
                                         {"template", {{"spec", {{"parallelism", 4}}}}}}})}}}};
  auto s = summarize_operator(js);
  CHECK(s.kind == "train");
  CHECK(s.nodes == 4);
  CHECK(s.sweep == "sw");
  CHECK(s.state == RunState::kPending);
  js["status"]["replicatedJobsStatus"] = json::array({{{"name", "node"}, {"active", 1}}});
  CHECK(summarize_operator(js).state == RunState::kRunning);
  js["status"]["conditions"] = json::array({cond("Completed")});
  CHECK(summarize_operator(js).state == RunState::kSucceeded);
  js["status"]["conditions"] = json::array({cond("Failed")});
  CHECK(summarize_operator(js).state == RunState::kFailed);
}

TEST_CASE("run state: a TrainJob, an MPIJob and a suspended TFJob") {
  json tj = {{"kind", "TrainJob"},
             {"metadata", meta("tj")},
             {"spec",
              {{"trainer",
                {{"numNodes", 2}, {"resourcesPerNode", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}},
             {"status", {{"conditions", json::array({cond("Complete")})}}}};
  auto s = summarize_operator(tj);
  CHECK(s.nodes == 2);
  CHECK(s.gpus == 4);
  CHECK(s.state == RunState::kSucceeded);
  json worker = {{"replicas", 3},
                 {"template",
                  {{"spec",
                    {{"containers",
                      json::array({{{"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}}}};
  json mpi = {
      {"kind", "MPIJob"},
      {"metadata", meta("mpi")},
      {"spec", {{"mpiReplicaSpecs", {{"Launcher", {{"replicas", 1}}}, {"Worker", worker}}}}},
      {"status", {{"conditions", json::array({cond("Created"), cond("Running")})}}}};
  s = summarize_operator(mpi);
  CHECK(s.nodes == 3);  // the Launcher holds no GPUs and is no node
  CHECK(s.gpus == 8);
  CHECK(s.state == RunState::kRunning);
  json tf = {
      {"kind", "TFJob"},
      {"metadata", meta("tf")},
      {"spec", {{"runPolicy", {{"suspend", true}}}, {"tfReplicaSpecs", {{"Worker", worker}}}}}};
  CHECK(summarize_operator(tf).state == RunState::kPending);
}

TEST_CASE("run state: an InferenceService and a LeaderWorkerSet are services") {
  json isvc = {{"kind", "InferenceService"},
               {"metadata", meta("api")},
               {"spec", {{"predictor", {{"minReplicas", 2}}}}},
               {"status", {{"conditions", json::array({cond("Ready", "False")})}}}};
  auto s = summarize_operator(isvc);
  CHECK(s.kind == "serve");
  CHECK(s.nodes == 2);
  CHECK(s.state == RunState::kPending);
  isvc["status"]["conditions"] = json::array({cond("Ready")});
  CHECK(summarize_operator(isvc).state == RunState::kRunning);
  json lws = {{"kind", "LeaderWorkerSet"},
              {"metadata", meta("llm")},
              {"spec", {{"replicas", 3}}},
              {"status", {{"conditions", json::array({cond("Available")})}}}};
  s = summarize_operator(lws);
  CHECK(s.kind == "serve");
  CHECK(s.nodes == 3);
  CHECK(s.state == RunState::kRunning);
}

namespace {
using ktrain::kube::describe_run;
using ktrain::kube::log_container;
using ktrain::kube::pod_rank;

/// A pod of the Kubeflow operator: its replica's type and index, owned by `owner`.
json kubeflow_pod(const char* name, const char* type, const char* index, const char* owner,
                  const char* phase, int exit_code = -1) {
  json pod = {{"metadata",
               {{"name", name},
                {"creationTimestamp", "2026-12-01T10:00:00Z"},
                {"labels",
                 {{"ktrain.dev/run", "tgt-a"},
                  {"training.kubeflow.org/replica-type", type},
                  {"training.kubeflow.org/replica-index", index}}},
                {"annotations", {{"kubectl.kubernetes.io/default-container", "pytorch"}}},
                {"ownerReferences",
                 json::array({{{"kind", owner}, {"name", "tgt-a"}, {"controller", true}}})}}},
              {"spec", {{"nodeName", "node-1"}}},
              {"status", {{"phase", phase}}}};
  json cs = {{"name", "pytorch"}, {"restartCount", 0}};
  if (exit_code >= 0) {
    cs["state"]["terminated"] = {{"exitCode", exit_code},
                                 {"reason", exit_code ? "Error" : "Completed"},
                                 {"finishedAt", "2026-12-01T10:05:00Z"}};
  } else {
    cs["state"]["running"] = json::object();
  }
  // A sidecar's status first: the training container is found by its name.
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "sidecar"}, {"state", {{"running", json::object()}}}}, cs});
  return pod;
}
}  // namespace

TEST_CASE("run state: the node of an operator's pod, from its replica labels") {
  CHECK(pod_rank(kubeflow_pod("p-master-0", "master", "0", "PyTorchJob", "Running")) == 0);
  CHECK(pod_rank(kubeflow_pod("p-worker-0", "worker", "0", "PyTorchJob", "Running")) == 1);
  CHECK(pod_rank(kubeflow_pod("p-worker-2", "worker", "2", "PyTorchJob", "Running")) == 3);
  CHECK(pod_rank(kubeflow_pod("t-worker-0", "worker", "0", "TFJob", "Running")) == 0);
  CHECK(pod_rank(kubeflow_pod("t-worker-2", "worker", "2", "TFJob", "Running")) == 2);
  CHECK(pod_rank(kubeflow_pod("m-launcher", "launcher", "", "Job", "Running")) == 0);
  CHECK(pod_rank(kubeflow_pod("m-worker-1", "worker", "1", "MPIJob", "Running")) == 2);
  CHECK(pod_rank(kubeflow_pod("bad", "worker", "x", "TFJob", "Running")) == -1);
  // A JobSet's pods are its Jobs': the completion index.
  json js_pod = {{"metadata", {{"labels", {{"batch.kubernetes.io/job-completion-index", "3"}}}}}};
  CHECK(pod_rank(js_pod) == 3);

  CHECK(log_container(kubeflow_pod("p-master-0", "master", "0", "PyTorchJob", "Running")) ==
        "pytorch");
  CHECK(log_container(js_pod) == "train");
}

TEST_CASE("run state: a failed PyTorchJob: its conditions, the replica that failed, why") {
  json job = {
      {"kind", "PyTorchJob"},
      {"metadata", meta("tgt-a")},
      {"spec",
       {{"pytorchReplicaSpecs", {{"Master", {{"replicas", 1}}}, {"Worker", {{"replicas", 2}}}}}}},
      {"status",
       {{"startTime", "2026-12-01T10:00:00Z"},
        {"conditions",
         json::array(
             {{{"type", "Created"}, {"status", "True"}, {"reason", "PyTorchJobCreated"}},
              {{"type", "Running"}, {"status", "False"}},
              {{"type", "Failed"},
               {"status", "True"},
               {"reason", "PyTorchJobFailed"},
               {"message", "PyTorchJob ml/tgt-a is failed because 1 Worker replica(s) failed."},
               {"lastTransitionTime", "2026-12-01T10:05:01Z"}}})}}}};
  std::vector<json> pods = {
      kubeflow_pod("tgt-a-worker-1", "worker", "1", "PyTorchJob", "Running"),
      kubeflow_pod("tgt-a-master-0", "master", "0", "PyTorchJob", "Running"),
      kubeflow_pod("tgt-a-worker-0", "worker", "0", "PyTorchJob", "Failed", 3)};
  auto st = describe_run(job, pods, {});
  CHECK(st.summary.state == RunState::kFailed);
  CHECK(st.summary.nodes == 3);
  REQUIRE(st.conditions.size() == 2);
  CHECK(st.conditions[1] ==
        "Failed: PyTorchJobFailed (PyTorchJob ml/tgt-a is failed because 1 Worker replica(s) "
        "failed.)");
  REQUIRE(st.ranks.size() == 3);
  CHECK(st.ranks[0].pod == "tgt-a-master-0");
  CHECK(st.ranks[1].pod == "tgt-a-worker-0");
  CHECK(st.ranks[1].phase == "Failed");
  CHECK(st.ranks[1].exit_code == 3);  // the "pytorch" container's, not the sidecar's
  CHECK(st.ranks[2].pod == "tgt-a-worker-1");
  REQUIRE(st.started);
  REQUIRE(st.finished);  // from the Failed condition: the operator sets no completionTime then
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] == "rank 1 failed with exit code 3 (Error)");
}

TEST_CASE("run state: an operator's object that nothing acted on, or suspended") {
  json js = {
      {"kind", "JobSet"},
      {"metadata", meta("js")},
      {"spec",
       {{"replicatedJobs", json::array({{{"name", "node"},
                                         {"replicas", 1},
                                         {"template", {{"spec", {{"parallelism", 2}}}}}}})}}}};
  auto st = describe_run(js, {}, {});
  CHECK(st.summary.state == RunState::kPending);
  REQUIRE(st.ranks.size() == 2);
  CHECK(st.ranks[0].reason == "NotCreated");
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "no operator has acted on the JobSet yet (it has no status and no pods): is the JobSet "
        "controller running in the cluster?");

  js["spec"]["suspend"] = true;
  st = describe_run(js, {}, {});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "the JobSet is suspended: its pods are not created until it is resumed");

  // The JobSet's Job cannot create its pods: the Job controller's event is about it.
  js["spec"].erase("suspend");
  js["status"]["replicatedJobsStatus"] = json::array({{{"name", "node"}, {"active", 0}}});
  json event = {{"involvedObject", {{"kind", "Job"}, {"name", "js-node-0"}}},
                {"reason", "FailedCreate"},
                {"message", "pods \"js-node-0-0\" is forbidden: exceeded quota: q"}};
  st = describe_run(js, {}, {event});
  REQUIRE(st.explanations.size() == 1);
  CHECK(st.explanations[0] ==
        "the JobSet cannot create its pods: the namespace's ResourceQuota is used up: pods "
        "\"js-node-0-0\" is forbidden: exceeded quota: q");
}

TEST_CASE("run state: which container status asks for the checkpoint, and its answer") {
  using ktrain::kube::checkpoint_query;
  using ktrain::kube::parse_latest_checkpoint;
  auto pod = [](json command, json env) {
    return json{
        {"metadata", {{"name", "r-0"}}},
        {"spec",
         {{"containers",
           json::array(
               {{{"name", "sidecar"}, {"command", json::array({"sleep"})}},
                {{"name", "train"}, {"command", std::move(command)}, {"env", std::move(env)}}})}}}};
  };
  const json launcher = json::array({"/opt/ktrain/bin/ktrain-launch", "--"});
  const json ckpt = json::array({{{"name", "KTRAIN_RUN"}, {"value", "r"}},
                                 {{"name", "KTRAIN_CHECKPOINT_DIR"}, {"value", "/ckpt"}}});
  auto q = checkpoint_query(pod(launcher, ckpt));
  REQUIRE(q);
  CHECK(q->container == "train");
  CHECK(q->dir == "/ckpt");
  CHECK(q->command ==
        std::vector<std::string>{"/opt/ktrain/bin/ktrain-launch", "--latest-checkpoint"});
  // No checkpoint volume, a command without the launcher, an empty folder, no env at all:
  // nothing to ask.
  CHECK_FALSE(
      checkpoint_query(pod(launcher, json::array({{{"name", "KTRAIN_RUN"}, {"value", "r"}}}))));
  CHECK_FALSE(checkpoint_query(pod(json::array({"python3", "train.py"}), ckpt)));
  CHECK_FALSE(checkpoint_query(
      pod(launcher, json::array({{{"name", "KTRAIN_CHECKPOINT_DIR"}, {"value", ""}}}))));
  CHECK_FALSE(checkpoint_query(json{{"spec", {{"containers", json::array()}}}}));
  // An operator's pod: its default container's.
  json op = pod(launcher, ckpt);
  op["metadata"]["annotations"] = {{"kubectl.kubernetes.io/default-container", "pytorch"}};
  CHECK_FALSE(checkpoint_query(op));
  op["spec"]["containers"][1]["name"] = "pytorch";
  REQUIRE(checkpoint_query(op));
  CHECK(checkpoint_query(op)->container == "pytorch");

  auto seen = parse_latest_checkpoint("1700000000 /ckpt/step 1200\n");
  REQUIRE(seen);
  CHECK(seen->path == "/ckpt/step 1200");
  CHECK(std::chrono::system_clock::to_time_t(seen->written) == 1700000000);
  CHECK_FALSE(parse_latest_checkpoint(""));  // none yet
  CHECK_FALSE(parse_latest_checkpoint("\n"));
  CHECK_FALSE(parse_latest_checkpoint("soon /ckpt/a\n"));
  CHECK_FALSE(parse_latest_checkpoint("1700000000\n"));
  CHECK_FALSE(parse_latest_checkpoint("1700000000 \n"));
  CHECK_FALSE(parse_latest_checkpoint(" /ckpt/a\n"));
  CHECK_FALSE(parse_latest_checkpoint("1 /a\n2 /b\n"));
  CHECK_FALSE(parse_latest_checkpoint("99999999999999999999 /a\n"));
}
