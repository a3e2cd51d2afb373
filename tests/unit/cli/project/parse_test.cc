#include "project/parse.h"

#include <doctest/doctest.h>

#include "parse_test_util.h"

#include <string>
#include <vector>

using namespace ktrain::project;
using namespace ktrain::project::testing;

namespace {

/// The complete example of the project file specification (with `replicas` left out of
/// serve, since a fixed count and autoscale are mutually exclusive).
const char* const kComplete = R"(name: resnet50
namespace: ml-team-a
labels: {team: vision}

image:
  ref: registry.example.com/ml/resnet50:v3
  pullSecrets: [regcred]
  build:
    base: nvcr.io/nvidia/pytorch:24.08-py3
    repository: registry.example.com/ml/resnet50
    context: ./src
    ignore: ["data/", "*.ckpt"]
    workdir: /workspace
    env: {PYTHONUNBUFFERED: "1"}

train:
  command: [python, train.py, --epochs, "90", --lr, "{lr}", --batch, "{batch}"]
  framework: pytorch
  nodes: 4
  gpus: 8
  mig: 1g.10gb
  gpuType: NVIDIA-H100-80GB-HBM3
  cpu: "32"
  memory: 256Gi
  shm: 64Gi
  env: {NCCL_DEBUG: WARN}
  envFrom: [secret/wandb, configMap/hparams]
  volumes:
    - {claim: imagenet, mount: /data, readOnly: true}
    - {claim: checkpoints, mount: /ckpt}
    - {configMap: train-config, mount: /etc/train}
  restarts: 3
  deadline: 24h
  ttl: 7d
  preflight: quick
  sweep:
    lr: ["0.1", "0.01"]
    batch: ["256", "512"]

scheduling:
  queue: team-a
  gang: none
  priority: high
  nodeSelector: {topology.kubernetes.io/zone: us-east-1a}
  tolerations: ["nvidia.com/gpu:NoSchedule", "dedicated=ml:NoSchedule"]
  runtimeClass: nvidia

security:
  runAsUser: 1000
  runAsNonRoot: true

serve:
  command: [python, serve.py]
  port: 8080
  gpus: 1
  autoscale:
    min: 2
    max: 20
    cpu: 70
    metric: {name: DCGM_FI_DEV_GPU_UTIL, target: "70"}
  readiness: {path: /healthz}
  liveness: {path: /healthz}
  rollout: {maxSurge: 1, maxUnavailable: 0}

patches:
  Job:
    spec: {template: {metadata: {annotations: {sidecar.istio.io/inject: "false"}}}}
)";

const char* const kMinimal =
    "name: hello\nimage: python:3.12\ntrain:\n  command: [python, train.py]\n";

/// kMinimal with `extra` appended under train (indented by the caller).
std::string with_train(const std::string& extra) {
  return std::string(kMinimal) + extra;
}

}  // namespace

TEST_CASE("parse: every field of the complete example lands in the struct") {
  Project p = parse(kComplete);
  CHECK(p.file == "ktrain.yaml");
  CHECK(p.directory == "/work/proj");
  CHECK(p.name == "resnet50");
  CHECK(p.namespace_ == "ml-team-a");
  CHECK(p.labels == StringPairs{{"team", "vision"}});
  CHECK(p.image.ref == "registry.example.com/ml/resnet50:v3");
  CHECK(p.image.pull_secrets == std::vector<std::string>{"regcred"});
  REQUIRE(p.image.build);
  CHECK(p.image.build->base == "nvcr.io/nvidia/pytorch:24.08-py3");
  CHECK(p.image.build->repository == "registry.example.com/ml/resnet50");
  CHECK(p.image.build->context == "/work/proj/src");
  CHECK(p.image.build->ignore == std::vector<std::string>{"data/", "*.ckpt"});
  CHECK(p.image.build->workdir == "/workspace");
  CHECK(p.image.build->env == StringPairs{{"PYTHONUNBUFFERED", "1"}});

  REQUIRE(p.train);
  const Train& t = *p.train;
  CHECK(t.command == std::vector<std::string>{"python", "train.py", "--epochs", "90", "--lr",
                                              "{lr}", "--batch", "{batch}"});
  CHECK(t.framework == "pytorch");
  CHECK(t.nodes == 4);
  CHECK(t.gpus == 8);
  CHECK(t.mig == "1g.10gb");
  CHECK(t.gpu_type == "NVIDIA-H100-80GB-HBM3");
  CHECK(t.cpu == "32");
  CHECK(t.memory == "256Gi");
  CHECK(t.shm == "64Gi");
  CHECK(t.env == StringPairs{{"NCCL_DEBUG", "WARN"}});
  REQUIRE(t.env_from.size() == 2);
  CHECK(t.env_from[0].kind == EnvFrom::Kind::kSecret);
  CHECK(t.env_from[0].name == "wandb");
  CHECK(t.env_from[1].kind == EnvFrom::Kind::kConfigMap);
  CHECK(t.env_from[1].name == "hparams");
  REQUIRE(t.volumes.size() == 3);
  CHECK(t.volumes[0].kind == Volume::Kind::kClaim);
  CHECK(t.volumes[0].source == "imagenet");
  CHECK(t.volumes[0].mount == "/data");
  CHECK(t.volumes[0].read_only);
  CHECK(t.volumes[1].source == "checkpoints");
  CHECK_FALSE(t.volumes[1].read_only);
  CHECK(t.volumes[2].kind == Volume::Kind::kConfigMap);
  CHECK(t.volumes[2].source == "train-config");
  CHECK(t.volumes[2].mount == "/etc/train");
  CHECK(t.restarts == 3);
  CHECK(t.deadline_s == 86400);
  CHECK(t.ttl_s == 604800);
  CHECK(t.preflight == "quick");
  REQUIRE(t.sweep.size() == 2);
  CHECK(t.sweep[0].name == "lr");
  CHECK(t.sweep[0].values == std::vector<std::string>{"0.1", "0.01"});
  CHECK(t.sweep[1].name == "batch");
  CHECK(t.sweep[1].values == std::vector<std::string>{"256", "512"});

  CHECK(p.scheduling.queue == "team-a");
  CHECK(p.scheduling.gang == "none");
  CHECK(p.scheduling.priority == "high");
  CHECK(p.scheduling.node_selector == StringPairs{{"topology.kubernetes.io/zone", "us-east-1a"}});
  CHECK(p.scheduling.tolerations_set);
  REQUIRE(p.scheduling.tolerations.size() == 2);
  CHECK(p.scheduling.tolerations[0].key == "nvidia.com/gpu");
  CHECK(p.scheduling.tolerations[0].op == "Exists");
  CHECK(p.scheduling.tolerations[0].effect == "NoSchedule");
  CHECK(p.scheduling.tolerations[1].key == "dedicated");
  CHECK(p.scheduling.tolerations[1].op == "Equal");
  CHECK(p.scheduling.tolerations[1].value == "ml");
  CHECK(p.scheduling.tolerations[1].effect == "NoSchedule");
  CHECK(p.scheduling.runtime_class == "nvidia");

  CHECK(p.security.run_as_user == 1000);
  CHECK(p.security.run_as_non_root);

  REQUIRE(p.serve);
  const Serve& s = *p.serve;
  CHECK(s.command == std::vector<std::string>{"python", "serve.py"});
  CHECK(s.port == 8080);
  CHECK(s.gpus == 1);
  CHECK_FALSE(s.replicas);
  REQUIRE(s.autoscale);
  CHECK(s.autoscale->min == 2);
  CHECK(s.autoscale->max == 20);
  CHECK(s.autoscale->cpu == 70);
  REQUIRE(s.autoscale->metric);
  CHECK(s.autoscale->metric->name == "DCGM_FI_DEV_GPU_UTIL");
  CHECK(s.autoscale->metric->target == "70");
  REQUIRE(s.readiness);
  CHECK(s.readiness->path == "/healthz");
  CHECK(s.readiness->period_s == 10);
  REQUIRE(s.liveness);
  CHECK(s.liveness->path == "/healthz");
  CHECK(s.rollout.max_surge == 1);
  CHECK(s.rollout.max_unavailable == 0);

  REQUIRE(p.patches.size() == 1);
  CHECK(p.patches[0].first == "Job");
  CHECK(
      p.patches[0].second.dump() ==
      R"({"spec":{"template":{"metadata":{"annotations":{"sidecar.istio.io/inject":"false"}}}}})");
}

TEST_CASE("parse: a minimal file gets the documented defaults") {
  Project p = parse(kMinimal);
  CHECK(p.name == "hello");
  CHECK(p.namespace_.empty());
  CHECK(p.image.ref == "python:3.12");
  CHECK_FALSE(p.image.build);
  REQUIRE(p.train);
  CHECK(p.train->framework == "pytorch");
  CHECK(p.train->nodes == 1);
  CHECK(p.train->gpus == 0);
  CHECK(p.train->processes_per_node == 0);
  CHECK(p.train->restarts == 0);
  CHECK(p.train->preflight == "quick");
  CHECK_FALSE(p.train->deadline_s);
  CHECK_FALSE(p.train->ttl_s);
  CHECK(p.scheduling.gang == "none");
  CHECK_FALSE(p.scheduling.tolerations_set);
  CHECK(p.security.run_as_non_root);
  CHECK_FALSE(p.serve);
}

TEST_CASE("parse: build context defaults to the project folder; absolute stays") {
  auto p = parse(
      "name: a\nimage: {build: {base: python:3.12, repository: reg.io/a}}\ntrain: {command: "
      "[x]}\n");
  REQUIRE(p.image.build);
  CHECK(p.image.build->context == "/work/proj");
  CHECK(p.image.ref.empty());
  p = parse(
      "name: a\nimage: {build: {base: python:3.12, repository: reg.io/a, context: /src/}}\n"
      "train: {command: [x]}\n");
  CHECK(p.image.build->context == "/src");
}

TEST_CASE("parse: env values keep their YAML text; null means unset") {
  auto p = parse(with_train("  env: {A: 1, B: true, C: 0.10, D: \"x\"}\n  nodes:\n"));
  CHECK(p.train->env == StringPairs{{"A", "1"}, {"B", "true"}, {"C", "0.10"}, {"D", "x"}});
  CHECK(p.train->nodes == 1);
}

TEST_CASE("parse: wrong types and values, with line:column and the key path") {
  CHECK(problem(with_train("  gpus: -1\n")) ==
        "ktrain.yaml:5:9: train.gpus: expected a whole number >= 0, found \"-1\"");
  CHECK(problem(with_train("  nodes: 0\n")) ==
        "ktrain.yaml:5:10: train.nodes: expected a whole number >= 1, found \"0\"");
  CHECK(parse(with_train("  processesPerNode: 2\n")).train->processes_per_node == 2);
  CHECK(problem(with_train("  processesPerNode: 0\n")) ==
        "ktrain.yaml:5:21: train.processesPerNode: expected a whole number >= 1, found \"0\"");
  CHECK(problem(with_train("  nodes: [1]\n")) ==
        "ktrain.yaml:5:10: train.nodes: expected a whole number >= 1, found a list");
  CHECK(problem(with_train("  gpus: 1.5\n")) ==
        "ktrain.yaml:5:9: train.gpus: expected a whole number >= 0, found \"1.5\"");
  CHECK(problem(with_train("  memory: 16GB\n")) ==
        "ktrain.yaml:5:11: train.memory: expected a Kubernetes quantity like 500m, 2, 16Gi, "
        "found \"16GB\"; did you mean 16Gi?");
  CHECK(problem(with_train("  cpu: \"0\"\n")) ==
        "ktrain.yaml:5:8: train.cpu: expected a quantity greater than 0, found \"0\"");
  CHECK(problem(with_train("  deadline: 24\n")) ==
        "ktrain.yaml:5:13: train.deadline: expected a duration like 90s, 30m, 24h, 7d or 1h30m, "
        "found \"24\"; add a unit (s, m, h or d)");
  CHECK(problem(with_train("  deadline: 0s\n")) ==
        "ktrain.yaml:5:13: train.deadline: expected a duration greater than 0, like 24h, found "
        "\"0s\"");
  CHECK(problems(with_train("  ttl: 0s\n")).empty());
  CHECK(problem(with_train("  framework: torch\n")) ==
        "ktrain.yaml:5:14: train.framework: expected one of pytorch | paddle | tensorflow | jax | "
        "none, found \"torch\"; did you mean `pytorch`?");
  CHECK(problem(with_train("  preflight: ful\n")) ==
        "ktrain.yaml:5:14: train.preflight: expected one of off | quick | full, found \"ful\"; did "
        "you mean `full`?");
  CHECK(problem(with_train("  restarts: yes\n")) ==
        "ktrain.yaml:5:13: train.restarts: expected a whole number >= 0, found \"yes\"");
}

TEST_CASE("parse: names") {
  CHECK(problem("name: ResNet\nimage: a:1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:1:7: name: expected a DNS-1123 label (lowercase letters, digits and '-', "
        "starting and ending with a letter or digit) like resnet50, found \"ResNet\"");
  CHECK(problem("name: " + std::string(41, 'a') + "\nimage: a:1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:1:7: name: expected a name of at most 40 characters (it has 41), found \"" +
            std::string(41, 'a') + "\"");
  CHECK(
      problems("name: " + std::string(40, 'a') + "\nimage: a:1\ntrain: {command: [x]}\n").empty());
  CHECK(problem(std::string(kMinimal) + "namespace: Team_A\n") ==
        "ktrain.yaml:5:12: namespace: expected a DNS-1123 label (lowercase letters, digits and "
        "'-', starting and ending with a letter or digit) like ml-team-a, found \"Team_A\"");
  CHECK(problem(std::string(kMinimal) + "scheduling: {priority: High}\n") ==
        "ktrain.yaml:5:24: scheduling.priority: expected a DNS-1123 name (lowercase letters, "
        "digits and '-', starting and ending with a letter or digit, and '.') like high, found "
        "\"High\"");
}

TEST_CASE("parse: unknown keys, with suggestions") {
  CHECK(problem(with_train("  gpu: 8\n")) ==
        "ktrain.yaml:5:3: train.gpu: unknown key; did you mean `train.gpus`?");
  CHECK(problem(std::string(kMinimal) + "gpus: 8\n") ==
        "ktrain.yaml:5:1: gpus: unknown key; did you mean `train.gpus`?");
  CHECK(problem(std::string(kMinimal) + "zzz: 1\n") ==
        "ktrain.yaml:5:1: zzz: unknown key; expected one of: name, namespace, labels, image, "
        "train, scheduling, security, launcher, serve, patches");
  CHECK(problem(std::string(kMinimal) + "scheduling: {nodeselector: {a: b}}\n") ==
        "ktrain.yaml:5:14: scheduling.nodeselector: unknown key; did you mean "
        "`scheduling.nodeSelector`?");
}

TEST_CASE("parse: all problems are reported in one run, in file order") {
  auto all = problems(
      "name: Bad_Name\nimage: a:1\ntrain:\n  command: [x]\n  gpus: -2\n"
      "  nodes: zero\n  cpu: lots\n");
  REQUIRE(all.size() == 4);
  CHECK(all[0].rfind("ktrain.yaml:1:7: name:", 0) == 0);
  CHECK(all[1].rfind("ktrain.yaml:5:9: train.gpus:", 0) == 0);
  CHECK(all[2].rfind("ktrain.yaml:6:10: train.nodes:", 0) == 0);
  CHECK(all[3].rfind("ktrain.yaml:7:8: train.cpu:", 0) == 0);
}

TEST_CASE("parse: required fields") {
  CHECK(problem("image: a:1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:1:1: name: missing; every project needs a name like `name: resnet50`");
  CHECK(problem("name: a\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:1:1: image: missing; say which image to run, like `image: "
        "registry.example.com/team/app:v1`");
  CHECK(problem("name: a\nimage: a:1\ntrain: {gpus: 1}\n") ==
        "ktrain.yaml:3:8: train.command: missing; what to run in each worker, like `command: "
        "[python, train.py]`");
  CHECK(problem("name: a\nimage: a:1\ntrain: {command: []}\n") ==
        "ktrain.yaml:3:18: train.command: expected a non-empty list like [python, train.py], "
        "found a list");
  CHECK(problem("name: a\nimage: a:1\n") ==
        "ktrain.yaml:1:1: nothing to run: add a `train` section (like `train: {command: [python, "
        "train.py]}`) or a `serve` section");
  CHECK(problem("name: a\nimage: a:1\nserve: {command: [x]}\n") ==
        "ktrain.yaml:3:8: serve.port: missing; the port the server listens on, like `port: 8080`");
}

TEST_CASE("parse: images") {
  CHECK(problem("name: a\nimage: Foo/Bar:1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:2:8: image: repository names are lowercase letters, digits and separators "
        "(. _ __ -) (no uppercase); expected an image reference like "
        "registry.example.com/team/app:v1, found \"Foo/Bar:1\"");
  CHECK(problem("name: a\nimage: {build: {base: python:3, repository: reg.io/a:v1}}\n"
                "train: {command: [x]}\n") ==
        "ktrain.yaml:2:45: image.build.repository: expected a repository without a tag or "
        "digest, like registry.example.com/ml/resnet50 (ktrain build pushes by digest), found "
        "\"reg.io/a:v1\"");
  CHECK(problem("name: a\nimage: {pullSecrets: [x]}\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:2:8: image.ref: missing; give `ref` (the image to run) or `build` (how "
        "ktrain build makes it)");
}

TEST_CASE("parse: volumes") {
  CHECK(problem(with_train("  volumes: [{claim: a, mount: data}]\n")) ==
        "ktrain.yaml:5:31: train.volumes[0].mount: expected an absolute path like /data (no '..' "
        "or ':'), found \"data\"");
  CHECK(problem(with_train("  volumes: [{claim: a, mount: /d}, {secret: b, mount: /d/}]\n")) ==
        "ktrain.yaml:5:55: train.volumes[1].mount: mount path /d is already used by "
        "train.volumes[0]");
  CHECK(problem(with_train("  volumes: [{claim: a, secret: b, mount: /d}]\n")) ==
        "ktrain.yaml:5:13: train.volumes[0]: expected exactly one of claim, configMap, secret or "
        "emptyDir, found 2");
  CHECK(problem(with_train("  volumes: [{claim: A, mount: /d}]\n")) ==
        "ktrain.yaml:5:21: train.volumes[0].claim: expected a DNS-1123 name (lowercase letters, "
        "digits and '-', starting and ending with a letter or digit, and '.') like imagenet, "
        "found \"A\"");
  auto p = parse(with_train("  volumes: [{emptyDir: {}, mount: /scratch}]\n"));
  REQUIRE(p.train->volumes.size() == 1);
  CHECK(p.train->volumes[0].kind == Volume::Kind::kEmptyDir);
  CHECK(problem(with_train("  shm: 1Gi\n  volumes: [{emptyDir: {}, mount: /dev/shm}]\n")) ==
        "ktrain.yaml:5:8: train.shm: mounts /dev/shm, which train.volumes[0] also mounts");
}

TEST_CASE("parse: GPUs, MIG and envFrom") {
  CHECK(problem(with_train("  mig: 1g.10gb\n")) ==
        "ktrain.yaml:5:8: train.mig: needs train.gpus > 0 (the number of MIG slices per node)");
  CHECK(problem(with_train("  gpus: 1\n  mig: 10gb\n")) ==
        "ktrain.yaml:6:8: train.mig: expected a MIG profile like 1g.10gb or 3g.40gb, found "
        "\"10gb\"");
  CHECK(problems(with_train("  gpus: 1\n  mig: 1g.10gb+me\n")).empty());
  CHECK(problem(with_train("  envFrom: [wandb]\n")) ==
        "ktrain.yaml:5:13: train.envFrom[0]: expected secret/NAME or configMap/NAME, like "
        "secret/wandb, found \"wandb\"");
}

TEST_CASE("parse: env and labels") {
  CHECK(problem(with_train("  env: {1BAD: x}\n")) ==
        "ktrain.yaml:5:9: train.env.1BAD: expected an environment variable name (letters, "
        "digits, '_', '-' and '.', not starting with a digit) like NCCL_DEBUG, found \"1BAD\"");
  CHECK(problem(with_train("  env: {A: [1]}\n")) ==
        "ktrain.yaml:5:12: train.env.A: expected a string value like \"1\" (quote it to be sure), "
        "found a list");
  CHECK(problem(std::string(kMinimal) + "labels: {team: \"a b\"}\n") ==
        "ktrain.yaml:5:16: labels.team: expected a label value (at most 63 letters, digits, '-', "
        "'_' or '.', starting and ending alphanumeric) like vision, found \"a b\"");
  CHECK(problem(std::string(kMinimal) + "labels: {ktrain.dev/run: x}\n") ==
        "ktrain.yaml:5:10: labels[ktrain.dev/run]: this label is set by ktrain; choose another "
        "key");
}

TEST_CASE("parse: sweep parameters and placeholders") {
  CHECK(problem("name: a\nimage: a:1\ntrain:\n  command: [x, \"{lr}\"]\n") ==
        "ktrain.yaml:4:16: train.command[1]: unknown placeholder {lr}: there is no train.sweep; "
        "add `sweep: {lr: [...]}` to train");
  CHECK(problem("name: a\nimage: a:1\ntrain:\n  command: [x, \"{lt}\"]\n  sweep: {lr: [1, 2]}\n") ==
        "ktrain.yaml:4:16: train.command[1]: unknown placeholder {lt}: did you mean {lr}?");
  CHECK(problems("name: a\nimage: a:1\ntrain:\n  command: [x, \"{\\\"a\\\": 1}\", \"{}\"]\n")
            .empty());
  CHECK(
      problem(with_train("  sweep: {lr: 0.1}\n")) ==
      "ktrain.yaml:5:15: train.sweep.lr: expected a list like [\"0.1\", \"0.01\"], found \"0.1\"");
  CHECK(problem(with_train("  sweep: {lr: []}\n")) ==
        "ktrain.yaml:5:15: train.sweep.lr: expected a non-empty list of values like [\"0.1\", "
        "\"0.01\"], found a list");
  CHECK(problem(with_train("  sweep: {lr: [[1]]}\n")) ==
        "ktrain.yaml:5:16: train.sweep.lr[0]: expected a value like \"0.1\", found a list");
  CHECK(problem(with_train("  sweep: {lr: [1], LR: [2]}\n")) ==
        "ktrain.yaml:5:20: train.sweep.LR: clashes with `lr`: both become KTRAIN_PARAM_LR");
}

TEST_CASE("parse: sweep.parallel is a number; a list makes `parallel` a parameter") {
  auto p = parse(with_train("  sweep: {lr: [1, 2, 3], parallel: 2}\n"));
  CHECK(p.train->sweep_parallel == 2);
  REQUIRE(p.train->sweep.size() == 1);
  CHECK(p.train->sweep[0].name == "lr");
  p = parse(with_train("  sweep: {parallel: [1, 2]}\n"));
  CHECK(p.train->sweep_parallel == 0);
  REQUIRE(p.train->sweep.size() == 1);
  CHECK(p.train->sweep[0].name == "parallel");
  CHECK(problem(with_train("  sweep: {parallel: 2}\n")) ==
        "ktrain.yaml:5:10: train.sweep: `parallel` limits how many runs of the sweep go at once, "
        "but there are no parameters; add some, like `lr: [\"0.1\", \"0.01\"]`");
  CHECK(problem(with_train("  sweep: {lr: [1], parallel: x}\n")) ==
        "ktrain.yaml:5:30: train.sweep.parallel: expected a whole number >= 1, found \"x\"");
}

TEST_CASE("parse: tolerations, short and full") {
  auto p = parse(std::string(kMinimal) +
                 "scheduling:\n  tolerations:\n    - gpu\n    - {key: k, operator: Exists, effect: "
                 "NoExecute, tolerationSeconds: 30}\n");
  REQUIRE(p.scheduling.tolerations.size() == 2);
  CHECK(p.scheduling.tolerations[0].key == "gpu");
  CHECK(p.scheduling.tolerations[0].op == "Exists");
  CHECK(p.scheduling.tolerations[0].effect.empty());
  CHECK(p.scheduling.tolerations[1].toleration_seconds == 30);
  CHECK(problem(std::string(kMinimal) + "scheduling: {tolerations: [\"a:NoSchedul\"]}\n") ==
        "ktrain.yaml:5:28: scheduling.tolerations[0]: expected a toleration like "
        "\"nvidia.com/gpu:NoSchedule\", \"dedicated=ml:NoSchedule\" or {key, operator, value, "
        "effect, tolerationSeconds}, found \"a:NoSchedul\"");
  CHECK(problem(
            std::string(kMinimal) +
            "scheduling: {tolerations: [{key: a, effect: NoSchedule, tolerationSeconds: 5}]}\n") ==
        "ktrain.yaml:5:76: scheduling.tolerations[0].tolerationSeconds: only applies with effect: "
        "NoExecute (effect is NoSchedule)");
  auto empty = parse(std::string(kMinimal) + "scheduling: {tolerations: []}\n");
  CHECK(empty.scheduling.tolerations_set);
  CHECK(empty.scheduling.tolerations.empty());
}

TEST_CASE("parse: serve rules") {
  const std::string base = "name: a\nimage: a:1\nserve:\n  port: 8080\n";
  CHECK(problem("name: a\nimage: a:1\nserve: {port: 70000}\n") ==
        "ktrain.yaml:3:15: serve.port: expected a port number from 1 to 65535, found \"70000\"");
  CHECK(problem(base + "  replicas: 2\n  autoscale: {max: 3}\n") ==
        "ktrain.yaml:5:3: serve.replicas: cannot be combined with serve.autoscale (the "
        "autoscaler owns the replica count); remove one of them");
  CHECK(problem(base + "  autoscale: {min: 5, max: 3}\n") ==
        "ktrain.yaml:5:20: serve.autoscale.min: expected min <= max, found min 5 > max 3");
  CHECK(problem(base + "  autoscale: {min: 0, max: 3}\n") ==
        "ktrain.yaml:5:20: serve.autoscale.min: expected a whole number >= 1, found \"0\"");
  CHECK(problem(base + "  autoscale: {max: 3, cpu: 101}\n") ==
        "ktrain.yaml:5:28: serve.autoscale.cpu: expected a whole number from 1 to 100, found "
        "\"101\"");
  CHECK(problem(base + "  readiness: healthz\n") ==
        "ktrain.yaml:5:14: serve.readiness: expected an HTTP path like /healthz or {path: "
        "/healthz}, found \"healthz\"");
  CHECK(problem(base + "  rollout: {maxSurge: 0, maxUnavailable: 0%}\n") ==
        "ktrain.yaml:5:12: serve.rollout: maxSurge and maxUnavailable cannot both be 0 (the "
        "rollout could never progress)");
  auto p = parse(base + "  rollout: {maxSurge: 25%}\n  liveness: /live\n  replicas: 3\n");
  CHECK(p.serve->rollout.max_surge == "25%");
  CHECK(p.serve->liveness->path == "/live");
  CHECK(p.serve->replicas == 3);
}

TEST_CASE("parse: security") {
  CHECK(problem(std::string(kMinimal) + "security: {runAsUser: 0}\n") ==
        "ktrain.yaml:5:23: security.runAsUser: 0 is root, but runAsNonRoot is true; use a "
        "non-zero id or set runAsNonRoot: false");
  auto p = parse(std::string(kMinimal) +
                 "security: {runAsUser: 0, runAsNonRoot: false, addCapabilities: [IPC_LOCK]}\n");
  CHECK(p.security.run_as_user == 0);
  CHECK_FALSE(p.security.run_as_non_root);
  CHECK(p.security.add_capabilities == std::vector<std::string>{"IPC_LOCK"});
  CHECK(problem(std::string(kMinimal) + "security: {runAsNonRoot: yes}\n") ==
        "ktrain.yaml:5:26: security.runAsNonRoot: expected true or false, found \"yes\"");
}

TEST_CASE("parse: patches") {
  auto p =
      parse(std::string(kMinimal) + "patches:\n  Job: {spec: {x: null, n: 1, f: 1.5, s: \"1\"}}\n");
  REQUIRE(p.patches.size() == 1);
  CHECK(p.patches[0].second.dump() == R"({"spec":{"x":null,"n":1,"f":1.5,"s":"1"}})");
  CHECK(problem(std::string(kMinimal) + "patches: {job: {}}\n") ==
        "ktrain.yaml:5:11: patches.job: unknown kind; did you mean `Job`?");
  CHECK(problem(std::string(kMinimal) + "patches: {Deployment: {}}\n") ==
        "ktrain.yaml:5:11: patches.Deployment: nothing to patch: no Deployment is rendered "
        "(there is no serve section)");
  CHECK(problem(std::string(kMinimal) + "patches: {Job: [1]}\n") ==
        "ktrain.yaml:5:16: patches.Job: expected a map like {spec: {template: {metadata: "
        "{annotations: {...}}}}}, found a list");
}

TEST_CASE("parse: file-level problems are one line") {
  CHECK(problem("") ==
        "ktrain.yaml: the file is empty; expected at least `name`, `image` and `train.command` "
        "(run 'ktrain init' to write one)");
  CHECK(problem("# only a comment\n") == problem(""));
  CHECK(problem("- a\n- b\n") ==
        "ktrain.yaml:1:1: expected a map of keys (name, image, train, ...) at the top level, "
        "found a list");
  CHECK(problem("name: [a\n") == "ktrain.yaml:2:1: invalid YAML: end of sequence flow not found");
  CHECK(problem(std::string("name: a\0b", 9)) ==
        "ktrain.yaml: not a text file (it contains NUL bytes); expected a YAML project file");
  CHECK(problem("name: \xff\xfe\n") ==
        "ktrain.yaml:1:7: not valid UTF-8; expected a YAML project file in UTF-8");
  CHECK(problem(std::string(kMinimal) + "---\nname: b\n") ==
        "ktrain.yaml:6:1: expected one YAML document, found 2 (separated by ---)");
  CHECK(problem("name: a\nname: b\nimage: a:1\ntrain: {command: [x]}\n") ==
        "ktrain.yaml:2:1: name: duplicate key; each key may appear once");
}

TEST_CASE("parse: ProjectError is a usage error whose message lists every problem") {
  try {
    parse("name: A\nimage: a:1\ntrain: {command: [x], gpus: -1}\n");
    FAIL("expected an error");
  } catch (const ProjectError& e) {
    CHECK(e.exit_status() == 2);
    CHECK(e.problems().size() == 2);
    CHECK(std::string(e.what()) == e.problems()[0].format() + "\n" + e.problems()[1].format());
  }
}

TEST_CASE("parse: every prefix of the complete example either parses or gives problems") {
  const std::string full = kComplete;
  for (std::size_t n = 0; n <= full.size(); n += 3) {
    CAPTURE(n);
    try {
      parse(full.substr(0, n));
    } catch (const ProjectError& e) {
      CHECK_FALSE(e.problems().empty());
      for (const auto& p : e.problems()) CHECK_FALSE(p.message.empty());
    }
  }
}

TEST_CASE("parse: launcher: where the launcher comes from") {
  auto p = parse(kMinimal);
  CHECK(p.launcher.inject == ktrain::project::Launcher::Inject::kAuto);
  CHECK(p.launcher.image == std::string("ghcr.io/ktrain/ktrain-launch:") + KTRAIN_VERSION);
  CHECK(p.launcher.image_from == "default");
  p = parse(std::string(kMinimal) +
            "launcher: {image: registry.example.com/mirror/launch:2, inject: always}\n");
  CHECK(p.launcher.inject == ktrain::project::Launcher::Inject::kAlways);
  CHECK(p.launcher.image == "registry.example.com/mirror/launch:2");
  CHECK(p.launcher.image_from == "launcher.image");
  CHECK(parse(kMinimal, {"launcher.inject=never"}).launcher.inject ==
        ktrain::project::Launcher::Inject::kNever);
  CHECK(problem(std::string(kMinimal) + "launcher: {inject: sometimes}\n") ==
        "ktrain.yaml:5:20: launcher.inject: expected one of auto | always | never, found "
        "\"sometimes\"");
  CHECK(problem(std::string(kMinimal) + "launcher: {imgae: a:1}\n") ==
        "ktrain.yaml:5:12: launcher.imgae: unknown key; did you mean `launcher.image`?");
  CHECK(problem(std::string(kMinimal) + "launcher: yes\n").find("launcher: expected") !=
        std::string::npos);
}

TEST_CASE("parse: suggestions are keys valid where the user is") {
  const std::string serve = "name: a\nimage: x:1\nserve:\n  port: 80\n";
  // A key of another section inside a section: not suggested as a move.
  CHECK(problem(serve + "  restarts: 3\n")
            .find("ktrain.yaml:5:3: serve.restarts: unknown key here "
                  "(`train.restarts` is a key of another "
                  "section); expected one of: command, port") == 0);
  // At the top level, the section it belongs to.
  CHECK(problem(std::string(kMinimal) + "gpus: 2\n") ==
        "ktrain.yaml:5:1: gpus: unknown key; did you mean `train.gpus`?");
  // serve has volumes, shm, envFrom and gpuType of its own now.
  auto p = parse(serve +
                 "  volumes: [{claim: weights, mount: /models, readOnly: true}]\n"
                 "  shm: 8Gi\n  envFrom: [secret/hf-token]\n  gpuType: NVIDIA-L4\n"
                 "  startup: {path: /ready, failureThreshold: 60}\n  spread: false\n");
  REQUIRE(p.serve->volumes.size() == 1);
  CHECK(p.serve->volumes[0].source == "weights");
  CHECK(p.serve->volumes[0].read_only);
  CHECK(p.serve->shm == "8Gi");
  CHECK(p.serve->env_from[0].name == "hf-token");
  CHECK(p.serve->gpu_type == "NVIDIA-L4");
  CHECK(p.serve->startup->failure_threshold == 60);
  CHECK_FALSE(p.serve->spread);
  CHECK(p.serve->disruption);
  CHECK(problem(serve + "  volumes: [{claim: a, mount: /dev/shm}]\n  shm: 1Gi\n")
            .find("serve.shm: mounts /dev/shm, which serve.volumes[0] also mounts") !=
        std::string::npos);
}

TEST_CASE("parse: scheduling.managedBy is a domain-prefixed path; MultiKueue needs a queue") {
  auto p = parse(std::string(kMinimal) +
                 "scheduling:\n  queue: team-a\n  managedBy: kueue.x-k8s.io/multikueue\n");
  CHECK(p.scheduling.managed_by == "kueue.x-k8s.io/multikueue");
  CHECK(parse(std::string(kMinimal) + "scheduling:\n  managedBy: acme.io/batch-controller\n")
            .scheduling.managed_by == "acme.io/batch-controller");
  CHECK(parse(kMinimal).scheduling.managed_by.empty());
  CHECK(problem(std::string(kMinimal) + "scheduling:\n  managedBy: multikueue\n") ==
        "ktrain.yaml:6:14: scheduling.managedBy: expected a domain-prefixed path (a DNS-1123 "
        "name, '/', then URL path characters) like kueue.x-k8s.io/multikueue, found "
        "\"multikueue\"");
  CHECK(problem(std::string(kMinimal) + "scheduling:\n  managedBy: Kueue.io/x\n")
            .find("expected a domain-prefixed path") != std::string::npos);
  CHECK(problem(std::string(kMinimal) + "scheduling:\n  managedBy: acme.io/" +
                std::string(60, 'a') + "\n")
            .find("at most 63 characters") != std::string::npos);
  CHECK(problem(std::string(kMinimal) + "scheduling:\n  managedBy: kueue.x-k8s.io/multikueue\n") ==
        "ktrain.yaml:6:14: scheduling.managedBy: MultiKueue dispatches only what a Kueue queue "
        "admits: set scheduling.queue (a LocalQueue whose ClusterQueue has the MultiKueue "
        "admission check)");
}
