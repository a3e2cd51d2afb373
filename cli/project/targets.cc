#include "project/targets.h"

namespace ktrain::project {

std::string trainjob_runtime(const Train& t) {
  if (!t.runtime.empty()) return t.runtime;
  if (t.framework == "pytorch") return "torch-distributed";
  return "";
}

namespace {

void train_limits(const Project& p, std::vector<TargetLimit>& out) {
  const Train& t = *p.train;
  const std::string target = t.target;
  auto limit = [&](const std::string& path, const std::string& why) {
    out.push_back({path, "train.target", "train.target " + target + ": " + why});
  };
  if (target != "trainjob" && !t.runtime.empty()) {
    out.push_back(
        {"train.runtime", "train.target",
         "is for train.target trainjob (the ClusterTrainingRuntime); the target is " + target});
  }
  if (!t.retry.empty() && target != "job" && target != "jobset") {
    limit("train.retry",
          "the rules render to a Job's podFailurePolicy, and the operator makes its pods "
          "itself (its restartPolicy decides); use target job or jobset");
  }
  if (t.min_nodes > 0 && target != "pytorchjob") {
    limit("train.nodes",
          "elastic nodes (" + std::to_string(t.min_nodes) + ".." + std::to_string(t.nodes) +
              ") need train.target: pytorchjob (Kubeflow's elasticPolicy, torchrun's elastic "
              "rendezvous); ktrain-launch's own rendezvous starts the workers once every node "
              "has joined, so the other targets keep a fixed count");
  }
  if (t.min_nodes > 0 && p.scheduling.gang == "volcano") {
    limit("scheduling.gang",
          "a gang waits for all " + std::to_string(t.nodes) +
              " nodes, which elastic nodes do not need; use gang: kueue or none");
  }
  if (target == "pytorchjob" && t.framework != "pytorch") {
    limit("train.framework",
          "the operator wires PyTorch (MASTER_ADDR, WORLD_SIZE, RANK); "
          "framework " +
              t.framework + " needs target job or jobset");
  }
  if (target == "tfjob" && t.framework != "tensorflow") {
    limit("train.framework", "the operator wires TensorFlow (TF_CONFIG); framework " + t.framework +
                                 " needs target job or jobset");
  }
  if (target == "mpijob") {
    if (t.watchdog_s > 0) {
      limit("train.watchdog",
            "mpirun starts the workers over SSH, not ktrain-launch, so nothing watches them; "
            "use target job or jobset");
    }
    if (t.preflight == "full") {
      limit("train.preflight",
            "mpirun starts the workers over SSH, not ktrain-launch, so no preflight runs; "
            "use target job or jobset for the full GPU and NCCL check");
    }
  }
  if (target == "trainjob") {
    if (trainjob_runtime(t).empty()) {
      limit("train.runtime", "name the ClusterTrainingRuntime to run on (framework " + t.framework +
                                 " has no default), like `runtime: mpi-distributed`");
    }
    if (!t.env_from.empty()) {
      limit("train.envFrom",
            "a TrainJob's trainer takes env, not envFrom; list the "
            "variables in train.env with their values");
    }
    if (t.ttl_s) {
      limit("train.ttl",
            "a TrainJob has no ttlSecondsAfterFinished; the runtime's JobSet "
            "template sets it");
    }
    if (t.restarts > 0) {
      limit("train.restarts",
            "a TrainJob has no retry count of its own; the runtime's "
            "JobSet failure policy sets it");
    }
    const auto& s = p.scheduling;
    if (!s.priority.empty()) {
      limit("scheduling.priority",
            "a TrainJob cannot set the pods' priorityClassName; the "
            "runtime's template sets it");
    }
    if (!s.runtime_class.empty()) {
      limit("scheduling.runtimeClass",
            "a TrainJob cannot set the pods' runtimeClassName; the "
            "runtime's template sets it");
    }
    if (s.gang == "volcano") {
      limit("scheduling.gang",
            "a TrainJob cannot set the pods' scheduler; use gang: kueue, or "
            "the runtime's podGroupPolicy");
    }
  }
}

void serve_limits(const Project& p, std::vector<TargetLimit>& out) {
  const Serve& s = *p.serve;
  const std::string target = s.target;
  auto limit = [&](const std::string& path, const std::string& why) {
    out.push_back({path, "serve.target", "serve.target " + target + ": " + why});
  };
  if (!s.runtime.empty() && target != "kserve") {
    limit("serve.runtime", "a runtime (" + s.runtime +
                               ") is a KServe ServingRuntime; set serve.target: kserve, or run "
                               "the server in the project's image with serve.command");
  }
  if (!s.model_uri.empty() && s.runtime.empty()) {
    out.push_back({"serve.model", "serve.runtime",
                   "serve.model is what a KServe runtime loads: set serve.runtime (triton or "
                   "vllm) and serve.target: kserve, or load the model in serve.command"});
  }
  if (!s.runtime.empty() && target == "kserve") {
    if (s.model_uri.empty()) {
      out.push_back({"serve.model", "serve.runtime",
                     "serve.runtime " + s.runtime +
                         " serves a model from storage: give serve.model.uri, like "
                         "`model: {uri: s3://models/resnet50}`"});
    }
    if (!s.command.empty()) {
      limit("serve.command", "the " + s.runtime +
                                 " runtime runs its own server; leave out serve.command, or "
                                 "leave out serve.runtime to run the project's container");
    }
  }
  if (s.nodes > 1 && target != "lws") {
    limit("serve.nodes", "one pod serves each replica; a model across " + std::to_string(s.nodes) +
                             " nodes needs serve.target: lws");
  }
  if (target == "kserve" && s.autoscale && s.autoscale->metric) {
    limit("serve.autoscale.metric",
          "KServe scales on cpu, memory, concurrency or rps, not on a Pods metric; use "
          "autoscale.cpu, or target deployment");
  }
}

}  // namespace

std::vector<TargetLimit> target_limits(const Project& p) {
  std::vector<TargetLimit> out;
  if (p.train) train_limits(p, out);
  if (p.serve) serve_limits(p, out);
  return out;
}

}  // namespace ktrain::project
