// ktrain serve's readiness of each serve.target: a Deployment's rollout, an
// InferenceService's Ready condition, a LeaderWorkerSet's ready groups.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/rollout.h"

using ktrain::kube::target_ready_state;
using nlohmann::json;

TEST_CASE("serve: an InferenceService is ready when KServe says Ready, and says why not") {
  json isvc = {{"kind", "InferenceService"}, {"metadata", {{"name", "api"}}}};
  auto s = target_ready_state(isvc);
  CHECK_FALSE(s.done);
  CHECK(s.message == "Waiting for inferenceservice \"api\" to be ready");
  isvc["status"]["conditions"] = json::array(
      {{{"type", "PredictorReady"},
        {"status", "False"},
        {"reason", "RevisionMissing"},
        {"message", "Configuration \"api-predictor\" does not have any ready Revision."}},
       {{"type", "Ready"}, {"status", "False"}, {"reason", "RevisionMissing"}}});
  s = target_ready_state(isvc);
  CHECK_FALSE(s.done);
  CHECK_FALSE(s.failed);
  CHECK(s.message ==
        "Waiting for inferenceservice \"api\" to be ready: RevisionMissing: "
        "Configuration \"api-predictor\" does not have any ready Revision.");
  isvc["status"]["modelStatus"] = {
      {"transitionStatus", "BlockedByFailedLoad"},
      {"lastFailureInfo", {{"reason", "ModelLoadFailed"}, {"message", "no model at s3://m/x"}}}};
  s = target_ready_state(isvc);
  CHECK(s.failed);
  CHECK(s.message == "inferenceservice \"api\" failed to load its model: no model at s3://m/x");
  isvc["status"].erase("modelStatus");
  isvc["status"]["conditions"][1]["status"] = "True";
  isvc["status"]["url"] = "http://api.team.example.com";
  s = target_ready_state(isvc);
  CHECK(s.done);
  CHECK(s.message == "inferenceservice \"api\" is ready at http://api.team.example.com");
}

TEST_CASE("serve: a LeaderWorkerSet is ready when Available with every group ready") {
  json lws = {{"kind", "LeaderWorkerSet"},
              {"metadata", {{"name", "llm"}}},
              {"spec", {{"replicas", 2}}},
              {"status",
               {{"readyReplicas", 1},
                {"conditions", json::array({{{"type", "Progressing"},
                                             {"status", "True"},
                                             {"reason", "GroupsProgressing"},
                                             {"message", "Replicas are progressing"}}})}}}};
  auto s = target_ready_state(lws);
  CHECK_FALSE(s.done);
  CHECK(s.message ==
        "Waiting for leaderworkerset \"llm\": 1 of 2 groups ready "
        "(GroupsProgressing: Replicas are progressing)");
  lws["status"]["readyReplicas"] = 2;
  lws["status"]["conditions"].push_back({{"type", "Available"}, {"status", "True"}});
  s = target_ready_state(lws);
  CHECK(s.done);
  CHECK(s.message == "leaderworkerset \"llm\": 2 of 2 groups ready");
}

TEST_CASE("serve: a Deployment's readiness is its rollout, as kubectl computes it") {
  json dep = {{"kind", "Deployment"},
              {"metadata", {{"name", "web"}, {"generation", 2}}},
              {"spec", {{"replicas", 2}}},
              {"status",
               {{"observedGeneration", 2},
                {"updatedReplicas", 2},
                {"replicas", 2},
                {"availableReplicas", 2}}}};
  CHECK(target_ready_state(dep).done);
  dep["status"]["availableReplicas"] = 1;
  CHECK_FALSE(target_ready_state(dep).done);
}
