// train.target and serve.target in the project file: the values, and what a target
// cannot express, reported at the field that asks for it with the target named.

#include "project/targets.h"

#include <doctest/doctest.h>

#include "parse_test_util.h"

#include <string>
#include <vector>

#include "project/parse.h"

using namespace ktrain::project;
using namespace ktrain::project::testing;

namespace {

const char* const kTrain = "name: demo\nimage: a/b:v1\ntrain:\n  command: [python, train.py]\n";
const char* const kServe = "name: api\nimage: a/b:v1\nserve:\n";

}  // namespace

TEST_CASE("project targets: the values, and the defaults job and deployment") {
  CHECK(parse(kTrain).train->target == "job");
  for (const char* t : {"pytorchjob", "mpijob", "trainjob", "jobset"}) {
    CAPTURE(t);
    CHECK(parse(kTrain, {std::string("train.target=") + t}).train->target == t);
  }
  CHECK(parse(std::string(kTrain) + "  target: tfjob\n  framework: tensorflow\n").train->target ==
        "tfjob");
  CHECK(problem(std::string(kTrain) + "  target: pytorch\n") ==
        "ktrain.yaml:5:11: train.target: expected one of job | pytorchjob | tfjob | mpijob | "
        "trainjob | jobset, found \"pytorch\"");
  const auto s = parse(std::string(kServe) + "  port: 8080\n").serve;
  CHECK(s->target == "deployment");
  CHECK(s->nodes == 1);
  CHECK(problem(std::string(kServe) + "  port: 8080\n  target: knative\n") ==
        "ktrain.yaml:5:11: serve.target: expected one of deployment | kserve | lws, found "
        "\"knative\"");
}

TEST_CASE("project targets: the operators' framework wiring must match the framework") {
  CHECK(problem(std::string(kTrain) + "  target: tfjob\n") ==
        "ktrain.yaml:5:11: train.framework: train.target tfjob: the operator wires TensorFlow "
        "(TF_CONFIG); framework pytorch needs target job or jobset");
  CHECK(problem(std::string(kTrain) + "  target: pytorchjob\n  framework: jax\n") ==
        "ktrain.yaml:6:14: train.framework: train.target pytorchjob: the operator wires PyTorch "
        "(MASTER_ADDR, WORLD_SIZE, RANK); framework jax needs target job or jobset");
  CHECK(problems(std::string(kTrain) + "  target: jobset\n  framework: jax\n").empty());
  CHECK(problem(std::string(kTrain) + "  target: mpijob\n  preflight: full\n") ==
        "ktrain.yaml:6:14: train.preflight: train.target mpijob: mpirun starts the workers over "
        "SSH, not ktrain-launch, so no preflight runs; use target job or jobset for the full GPU "
        "and NCCL check");
}

TEST_CASE("project targets: what a TrainJob cannot say, each at its field") {
  const std::string text = std::string(kTrain) +
                           "  target: trainjob\n"
                           "  ttl: 1d\n"
                           "  restarts: 2\n"
                           "  envFrom: [secret/wandb]\n"
                           "scheduling:\n"
                           "  priority: high\n"
                           "  runtimeClass: nvidia\n"
                           "  gang: volcano\n";
  const auto all = problems(text);
  REQUIRE(all.size() == 6);
  CHECK(all[0].rfind("ktrain.yaml:6:8: train.ttl: train.target trainjob: a TrainJob has no "
                     "ttlSecondsAfterFinished",
                     0) == 0);
  CHECK(all[1].rfind("ktrain.yaml:7:13: train.restarts: train.target trainjob:", 0) == 0);
  CHECK(all[2].rfind("ktrain.yaml:8:12: train.envFrom: train.target trainjob:", 0) == 0);
  CHECK(all[3].rfind("ktrain.yaml:10:13: scheduling.priority: train.target trainjob:", 0) == 0);
  CHECK(all[4].rfind("ktrain.yaml:11:17: scheduling.runtimeClass: train.target trainjob:", 0) == 0);
  CHECK(all[5].rfind("ktrain.yaml:12:9: scheduling.gang: train.target trainjob:", 0) == 0);
  // A runtime is needed when the framework has none, and only trainjob takes one.
  CHECK(problem(std::string(kTrain) + "  target: trainjob\n  framework: jax\n") ==
        "ktrain.yaml:5:11: train.runtime: train.target trainjob: name the ClusterTrainingRuntime "
        "to run on (framework jax has no default), like `runtime: mpi-distributed`");
  CHECK(parse(std::string(kTrain) + "  target: trainjob\n  framework: jax\n  runtime: jax-dist\n")
            .train->runtime == "jax-dist");
  CHECK(problem(std::string(kTrain) + "  runtime: torch-distributed\n") ==
        "ktrain.yaml:5:12: train.runtime: is for train.target trainjob (the "
        "ClusterTrainingRuntime); the target is job");
  CHECK(trainjob_runtime(*parse(kTrain).train) == "torch-distributed");
}

TEST_CASE("project targets: serve.runtime, serve.model and serve.nodes belong to their targets") {
  // A runtime serves a model: no port or command of the project's needed.
  const auto s = parse(std::string(kServe) +
                       "  target: kserve\n  runtime: triton\n  model: {uri: s3://m/resnet, "
                       "format: onnx}\n")
                     .serve;
  CHECK(s->runtime == "triton");
  CHECK(s->model_uri == "s3://m/resnet");
  CHECK(s->model_format == "onnx");
  CHECK(s->port == 0);
  CHECK(problem(std::string(kServe) + "  target: kserve\n") ==
        "ktrain.yaml:4:3: serve.port: missing; the port the server listens on, like `port: 8080`");
  CHECK(problem(std::string(kServe) + "  runtime: vllm\n  model: {uri: hf://org/llm}\n") ==
        "ktrain.yaml:4:12: serve.runtime: serve.target deployment: a runtime (vllm) is a KServe "
        "ServingRuntime; set serve.target: kserve, or run the server in the project's image with "
        "serve.command");
  CHECK(problem(std::string(kServe) + "  target: kserve\n  runtime: vllm\n") ==
        "ktrain.yaml:5:12: serve.model: serve.runtime vllm serves a model from storage: give "
        "serve.model.uri, like `model: {uri: s3://models/resnet50}`");
  CHECK(problem(std::string(kServe) +
                "  target: kserve\n  runtime: vllm\n  model: {uri: hf://o/m}\n  command: [x]\n") ==
        "ktrain.yaml:7:12: serve.command: serve.target kserve: the vllm runtime runs its own "
        "server; leave out serve.command, or leave out serve.runtime to run the project's "
        "container");
  CHECK(problem(std::string(kServe) + "  port: 80\n  model: {uri: s3://m/x}\n") ==
        "ktrain.yaml:5:10: serve.model: serve.model is what a KServe runtime loads: set "
        "serve.runtime (triton or vllm) and serve.target: kserve, or load the model in "
        "serve.command");
  CHECK(problem(std::string(kServe) + "  port: 80\n  target: kserve\n  runtime: triton\n  model: "
                                      "{uri: ftp://x/y}\n") ==
        "ktrain.yaml:7:16: serve.model.uri: expected a model URI: s3://, gs://, pvc://, hf://, "
        "oci:// or https://, like s3://models/resnet50, found \"ftp://x/y\"");
  CHECK(problem(std::string(kServe) + "  port: 80\n  nodes: 2\n") ==
        "ktrain.yaml:5:10: serve.nodes: serve.target deployment: one pod serves each replica; a "
        "model across 2 nodes needs serve.target: lws");
  CHECK(parse(std::string(kServe) + "  port: 80\n  target: lws\n  nodes: 2\n").serve->nodes == 2);
  CHECK(problem(std::string(kServe) +
                "  port: 80\n  target: kserve\n  autoscale: {max: 4, metric: {name: m, target: "
                "\"1\"}}\n") ==
        "ktrain.yaml:6:31: serve.autoscale.metric: serve.target kserve: KServe scales on cpu, "
        "memory, concurrency or rps, not on a Pods metric; use autoscale.cpu, or target "
        "deployment");
}

TEST_CASE("project targets: patches name the target's kind") {
  const std::string text = std::string(kTrain) +
                           "  target: pytorchjob\npatches:\n  PyTorchJob: {metadata: {annotations: "
                           "{a: b}}}\n";
  CHECK(parse(text).patches.at(0).first == "PyTorchJob");
  CHECK(problem(std::string(kTrain) + "  target: jobset\npatches:\n  Job: {metadata: {}}\n") ==
        "ktrain.yaml:7:3: patches.Job: nothing to patch: no Job is rendered (train.target is "
        "jobset)");
}

TEST_CASE(
    "project targets: the name starts with a letter (Services, TrainJobs, InferenceServices)") {
  CHECK(problem("name: 7b-llm\nimage: a/b:v1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:1:7: name: expected a name that starts with a letter (the runs' Services are "
        "named after it, and Kubernetes wants a letter first), like llm-7b, found \"7b-llm\"");
  CHECK(parse("name: llm-7b\nimage: a/b:v1\ntrain: {command: [x]}\n").name == "llm-7b");
}

TEST_CASE("project targets: a sweep's waiting runs are released on every train.target") {
  const std::string sweep = "  sweep: {lr: [\"0.1\", \"0.01\"], parallel: 1}\n";
  CHECK(problems(std::string(kTrain) + sweep).empty());
  CHECK(problems(std::string(kTrain) + "  target: jobset\n" + sweep).empty());
}

TEST_CASE("project targets: elastic nodes min..max, for a PyTorchJob only") {
  const std::string pt = std::string(kTrain) + "  target: pytorchjob\n";
  const auto t = parse(pt + "  nodes: 2..8\n").train;
  CHECK(t->nodes == 8);
  CHECK(t->min_nodes == 2);
  CHECK(parse(pt + "  nodes: 4\n").train->min_nodes == 0);
  CHECK(problem(pt + "  nodes: 8..2\n") ==
        "ktrain.yaml:6:10: train.nodes: elastic nodes 8..2: the fewest (8) must be below the "
        "most (2); for a fixed count write nodes: 2");
  CHECK(problem(pt + "  nodes: 4..4\n") ==
        "ktrain.yaml:6:10: train.nodes: elastic nodes 4..4: the fewest (4) must be below the "
        "most (4); for a fixed count write nodes: 4");
  for (const char* bad : {"0..4", "..4", "2..", "a..b", "-1..3", "2...4"}) {
    CAPTURE(bad);
    CHECK(problem(pt + "  nodes: \"" + bad + "\"\n")
              .find("train.nodes: expected a whole number >= 1, or elastic nodes as min..max") !=
          std::string::npos);
  }
  // The plain Job: the launcher's own rendezvous keeps a fixed count.
  CHECK(problem(std::string(kTrain) + "  nodes: 2..8\n")
            .starts_with("ktrain.yaml:5:10: train.nodes: train.target job: elastic nodes (2..8) "
                         "need train.target: pytorchjob"));
  CHECK(problem(pt + "  nodes: 2..8\nscheduling:\n  gang: volcano\n")
            .find("scheduling.gang: train.target pytorchjob: a gang waits for all 8 nodes") !=
        std::string::npos);
}
