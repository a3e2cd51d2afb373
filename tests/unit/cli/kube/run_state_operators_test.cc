// list's summary of the operators' objects: size, GPUs and state from their own
// conditions and status.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/run_state.h"

using ktrain::backend::RunState;
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
