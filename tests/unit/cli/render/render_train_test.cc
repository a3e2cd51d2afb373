#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "base/error.h"
#include "render/render.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

TEST_CASE("render: a training project gives a headless Service and an Indexed Job, in that order") {
  auto r = render_fixed(train_project());
  REQUIRE(r.objects.size() == 2);
  CHECK(r.objects[0]["kind"] == "Service");
  CHECK(r.objects[1]["kind"] == "Job");
  CHECK(r.objects[1]["apiVersion"] == "batch/v1");
  const auto& spec = r.objects[1]["spec"];
  CHECK(spec["completionMode"] == "Indexed");
  CHECK(spec["completions"] == 2);
  CHECK(spec["parallelism"] == 2);
  CHECK(r.warnings.empty());
}

TEST_CASE("render: 8 GPUs per node set nvidia.com/gpu limits and requests alike") {
  auto p = train_project();
  p.train->gpus = 8;
  p.train->cpu = "32";
  p.train->memory = "256Gi";
  auto r = render_fixed(p);
  const auto& res = container_of(object_of(r, "Job"))["resources"];
  CHECK(res["limits"]["nvidia.com/gpu"] == "8");
  CHECK(res["requests"]["nvidia.com/gpu"] == "8");
  CHECK(res["limits"]["cpu"] == "32");
  CHECK(res["requests"]["memory"] == "256Gi");
  CHECK(res["limits"] == res["requests"]);
}

TEST_CASE("render: no GPUs, cpu or memory leaves resources out") {
  auto r = render_fixed(train_project());
  CHECK_FALSE(container_of(object_of(r, "Job")).contains("resources"));
}

TEST_CASE("render: mig turns GPUs into nvidia.com/mig-<profile>") {
  auto p = train_project();
  p.train->gpus = 2;
  p.train->mig = "1g.10gb";
  auto r = render_fixed(p);
  const auto& res = container_of(object_of(r, "Job"))["resources"];
  CHECK(res["limits"]["nvidia.com/mig-1g.10gb"] == "2");
  CHECK(res["requests"]["nvidia.com/mig-1g.10gb"] == "2");
  CHECK_FALSE(res["limits"].contains("nvidia.com/gpu"));
}

TEST_CASE("render: shm is a memory-backed emptyDir mounted at /dev/shm") {
  auto p = train_project();
  p.train->shm = "64Gi";
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  const auto& vols = pod["volumes"];
  REQUIRE(vols.size() == 3);  // /dev/shm, then HOME, then the injected launcher
  const auto& vol = vols[0];
  CHECK(vol["emptyDir"]["medium"] == "Memory");
  CHECK(vol["emptyDir"]["sizeLimit"] == "64Gi");
  const auto& mount = pod["containers"][0]["volumeMounts"][0];
  CHECK(mount["mountPath"] == "/dev/shm");
  CHECK(mount["name"] == vol["name"]);
}

TEST_CASE(
    "render: no shm and no volumes: the writable HOME of the non-root user and the launcher") {
  const ordered_json launcher_volume = {{"name", "ktrain-launcher"},
                                        {"emptyDir", {{"sizeLimit", "64Mi"}}}};
  const ordered_json launcher_mount = {
      {"name", "ktrain-launcher"}, {"mountPath", "/opt/ktrain/bin"}, {"readOnly", true}};
  auto r = render_fixed(train_project());
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["volumes"] ==
        ordered_json::array(
            {{{"name", "home"}, {"emptyDir", ordered_json::object()}}, launcher_volume}));
  CHECK(pod["containers"][0]["volumeMounts"] ==
        ordered_json::array({{{"name", "home"}, {"mountPath", "/home/ktrain"}}, launcher_mount}));
  auto p = train_project();
  p.security.run_as_non_root = false;
  auto root = render_fixed(p);
  const auto& rpod = object_of(root, "Job")["spec"]["template"]["spec"];
  CHECK(rpod["volumes"] == ordered_json::array({launcher_volume}));
  CHECK(rpod["containers"][0]["volumeMounts"] == ordered_json::array({launcher_mount}));
  p.launcher.inject = project::Launcher::Inject::kNever;
  auto bare = render_fixed(p);
  const auto& bpod = object_of(bare, "Job")["spec"]["template"]["spec"];
  CHECK_FALSE(bpod.contains("volumes"));
  CHECK_FALSE(bpod["containers"][0].contains("volumeMounts"));
}

TEST_CASE("render: an image without the launcher gets it from an init container") {
  auto p = train_project();
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  REQUIRE(pod["initContainers"].size() == 1);
  const auto& init = pod["initContainers"][0];
  CHECK(init["name"] == "ktrain-launcher");
  CHECK(init["image"] == project::Launcher::default_image());
  CHECK(init["image"] == std::string("ghcr.io/ktrain/ktrain-launch:") + KTRAIN_VERSION);
  CHECK(init["imagePullPolicy"] == "IfNotPresent");
  CHECK(init["command"] == ordered_json::array({"/ktrain-launch", "--install", "/opt/ktrain/bin"}));
  CHECK(init["volumeMounts"] ==
        ordered_json::array({{{"name", "ktrain-launcher"}, {"mountPath", "/opt/ktrain/bin"}}}));
  // Limits too: a namespace whose quota asks for them admits the pod.
  CHECK(init["resources"]["limits"] == ordered_json({{"cpu", "100m"}, {"memory", "64Mi"}}));
  CHECK(init["resources"]["requests"] == init["resources"]["limits"]);
  CHECK(init["securityContext"]["allowPrivilegeEscalation"] == false);
  CHECK(init["securityContext"]["capabilities"]["drop"] == ordered_json::array({"ALL"}));
  // The training container is still started by the launcher, now from the volume.
  CHECK(pod["containers"][0]["command"][0] == "/opt/ktrain/bin/ktrain-launch");

  p.launcher.image = "registry.example.com/mirror/ktrain-launch:7";
  p.launcher.image_from = "launcher.image";
  auto own = render_fixed(p);
  CHECK(object_of(own, "Job")["spec"]["template"]["spec"]["initContainers"][0]["image"] ==
        "registry.example.com/mirror/ktrain-launch:7");
  auto plan = launcher_plan(p, p.image.ref);
  CHECK(plan.inject);
  CHECK(plan.reason ==
        "injected by an init container from registry.example.com/mirror/ktrain-launch:7 "
        "(launcher.image)");
}

TEST_CASE("render: the image that image.build makes has the launcher: nothing injected") {
  auto p = train_project();
  p.image.build.emplace();
  p.image.build->base = "nvcr.io/nvidia/pytorch:24.08-py3";
  p.image.build->repository = "registry.example.com/ml/resnet";
  p.image.ref = "";
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK_FALSE(pod.contains("initContainers"));
  CHECK(launcher_plan(p, "registry.example.com/ml/resnet@sha256:" + std::string(64, 'a')).reason ==
        "in the image (ktrain build puts it there: image.build)");
  // Another image than the one built (image.ref elsewhere) gets the launcher injected.
  p.image.ref = "docker.io/library/python:3.12-slim";
  CHECK(launcher_plan(p, p.image.ref).inject);
  // inject: always injects even into the built image; never, never.
  p.image.ref = "registry.example.com/ml/resnet:v1";
  CHECK_FALSE(launcher_plan(p, p.image.ref).inject);
  p.launcher.inject = project::Launcher::Inject::kAlways;
  CHECK(launcher_plan(p, p.image.ref).inject);
  CHECK(launcher_plan(p, p.image.ref).reason.find("launcher.inject: always") != std::string::npos);
  p.launcher.inject = project::Launcher::Inject::kNever;
  auto never = launcher_plan(p, "docker.io/library/python:3.12-slim");
  CHECK_FALSE(never.inject);
  CHECK(never.reason == "in the image at /opt/ktrain/bin (launcher.inject: never)");
}

TEST_CASE(
    "render: non-root by default with a numeric user, group and fsGroup the kubelet accepts") {
  auto r = render_fixed(train_project());
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  const auto& sc = pod["securityContext"];
  CHECK(sc["runAsNonRoot"] == true);
  CHECK(sc["runAsUser"] == 1000);
  CHECK(sc["runAsGroup"] == 1000);
  CHECK(sc["fsGroup"] == 1000);
  CHECK(sc["fsGroupChangePolicy"] == "OnRootMismatch");
  // HOME is writable, and comes before the user's env (whose HOME would win).
  const auto& env = pod["containers"][0]["env"];
  auto at = [&](const std::string& name) {
    for (std::size_t i = 0; i < env.size(); ++i) {
      if (env[i]["name"] == name) return static_cast<int>(i);
    }
    return -1;
  };
  REQUIRE(at("HOME") >= 0);
  CHECK(env[static_cast<std::size_t>(at("HOME"))]["value"] == "/home/ktrain");

  // The project's user: no group or fsGroup of ktrain's then.
  auto p = train_project();
  p.security.run_as_user = 2000;
  auto own = render_fixed(p);
  const auto& osc = object_of(own, "Job")["spec"]["template"]["spec"]["securityContext"];
  CHECK(osc["runAsUser"] == 2000);
  CHECK_FALSE(osc.contains("runAsGroup"));
  CHECK_FALSE(osc.contains("fsGroup"));

  // As root, asked for: the image's user, no HOME of ktrain's.
  p = train_project();
  p.security.run_as_non_root = false;
  p.train->env = {{"HOME", "/root"}};
  auto root = render_fixed(p);
  const auto& rpod = object_of(root, "Job")["spec"]["template"]["spec"];
  CHECK(rpod["securityContext"]["runAsNonRoot"] == false);
  CHECK_FALSE(rpod["securityContext"].contains("runAsUser"));
  CHECK_FALSE(rpod["securityContext"].contains("fsGroup"));
  int homes = 0;
  for (const auto& e : rpod["containers"][0]["env"]) homes += e["name"] == "HOME";
  CHECK(homes == 1);
}

TEST_CASE("render: volumes map to claims, configMaps, secrets and emptyDirs with mounts") {
  auto p = train_project();
  using K = project::Volume::Kind;
  p.train->volumes = {{K::kClaim, "imagenet", "/data", true},
                      {K::kClaim, "ckpt", "/ckpt", false},
                      {K::kConfigMap, "cfg", "/etc/train", false},
                      {K::kSecret, "keys", "/keys", false},
                      {K::kEmptyDir, "", "/scratch", false}};
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  const auto& v = pod["volumes"];
  const auto& m = pod["containers"][0]["volumeMounts"];
  REQUIRE(v.size() == 7);  // and HOME, and the launcher, last
  CHECK(v[5]["name"] == "home");
  CHECK(v[6]["name"] == "ktrain-launcher");
  CHECK(v[0]["persistentVolumeClaim"] ==
        ordered_json({{"claimName", "imagenet"}, {"readOnly", true}}));
  CHECK(m[0]["readOnly"] == true);
  CHECK(m[0]["mountPath"] == "/data");
  CHECK_FALSE(v[1]["persistentVolumeClaim"].contains("readOnly"));
  CHECK_FALSE(m[1].contains("readOnly"));
  CHECK(v[2]["configMap"]["name"] == "cfg");
  CHECK(v[3]["secret"]["secretName"] == "keys");
  CHECK(v[4]["emptyDir"] == ordered_json::object());
  for (std::size_t i = 0; i < 5; ++i) CHECK(m[i]["name"] == v[i]["name"]);
}

TEST_CASE("render: a GPU pod gets the default nvidia.com/gpu toleration") {
  auto p = train_project();
  p.train->gpus = 1;
  auto r = render_fixed(p);
  const auto& tol = object_of(r, "Job")["spec"]["template"]["spec"]["tolerations"];
  REQUIRE(tol.size() == 1);
  CHECK(
      tol[0] ==
      ordered_json({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}));
}

TEST_CASE("render: the user's tolerations replace the default GPU toleration") {
  auto p = train_project();
  p.train->gpus = 1;
  p.scheduling.tolerations = {{"dedicated", "Equal", "ml", "NoSchedule", std::nullopt}};
  p.scheduling.tolerations_set = true;
  auto r = render_fixed(p);
  const auto& tol = object_of(r, "Job")["spec"]["template"]["spec"]["tolerations"];
  REQUIRE(tol.size() == 1);
  CHECK(tol[0] == ordered_json({{"key", "dedicated"},
                                {"operator", "Equal"},
                                {"value", "ml"},
                                {"effect", "NoSchedule"}}));
}

TEST_CASE("render: an explicitly empty tolerations list means no toleration at all") {
  auto p = train_project();
  p.train->gpus = 1;
  p.scheduling.tolerations_set = true;
  auto r = render_fixed(p);
  CHECK_FALSE(object_of(r, "Job")["spec"]["template"]["spec"].contains("tolerations"));
}

TEST_CASE("render: a CPU-only pod gets no GPU toleration") {
  auto r = render_fixed(train_project());
  CHECK_FALSE(object_of(r, "Job")["spec"]["template"]["spec"].contains("tolerations"));
}

TEST_CASE(
    "render: the headless Service publishes not-ready addresses on the rdzv and master ports") {
  auto r = render_fixed(train_project());
  const auto& svc = object_of(r, "Service");
  CHECK(svc["metadata"]["name"] == "demo-abcde");
  CHECK(svc["spec"]["clusterIP"] == "None");
  CHECK(svc["spec"]["publishNotReadyAddresses"] == true);
  CHECK(svc["spec"]["selector"] == ordered_json({{"ktrain.dev/run", "demo-abcde"}}));
  const auto& ports = svc["spec"]["ports"];
  REQUIRE(ports.size() == 2);
  CHECK(ports[0]["name"] == "rdzv");
  CHECK(ports[0]["port"] == 29400);
  CHECK(ports[1]["name"] == "master");
  CHECK(ports[1]["port"] == 29500);
}

TEST_CASE("render: the pods' subdomain is the headless Service, and they never restart in place") {
  auto r = render_fixed(train_project());
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["subdomain"] == object_of(r, "Service")["metadata"]["name"]);
  CHECK(pod["restartPolicy"] == "Never");
  CHECK(pod["terminationGracePeriodSeconds"] == 30);
}

TEST_CASE("render: the container runs ktrain-launch with the train command as arguments") {
  auto r = render_fixed(train_project());
  const auto& c = container_of(object_of(r, "Job"));
  CHECK(c["name"] == "train");
  CHECK(c["image"] == "registry.example.com/ml/demo:v1");
  CHECK(c["command"] == ordered_json::array({"/opt/ktrain/bin/ktrain-launch", "--"}));
  CHECK(c["args"] == ordered_json::array({"python", "train.py", "--epochs", "3"}));
  CHECK(c["terminationMessagePolicy"] == "FallbackToLogsOnError");
}

TEST_CASE(
    "render: the launcher's variables come in the contract's order, HOME, then the user's env") {
  auto p = train_project();
  p.train->gpus = 4;
  p.train->framework = "paddle";
  p.train->preflight = "full";
  p.train->env = {{"NCCL_DEBUG", "WARN"}, {"A", "1"}};
  auto r = render_fixed(p);
  const auto& c = container_of(object_of(r, "Job"));
  std::vector<std::string> names;
  for (const auto& e : c["env"]) names.push_back(e["name"]);
  const std::vector<std::string> expected = {"KTRAIN_RUN",
                                             "KTRAIN_NNODES",
                                             "JOB_COMPLETION_INDEX",
                                             "KTRAIN_NPROC_PER_NODE",
                                             "KTRAIN_GPUS",
                                             "KTRAIN_MASTER_ADDR",
                                             "KTRAIN_RDZV_PORT",
                                             "KTRAIN_MASTER_PORT",
                                             "KTRAIN_RDZV_TIMEOUT",
                                             "KTRAIN_RDZV_SECRET",
                                             "KTRAIN_RDZV_JOB_UID",
                                             "KTRAIN_FRAMEWORK",
                                             "KTRAIN_PREFLIGHT",
                                             "KTRAIN_GRACE_PERIOD",
                                             "KTRAIN_POD_IP",
                                             "KTRAIN_NODE_NAME",
                                             "HOME",
                                             "NCCL_DEBUG",
                                             "A"};
  CHECK(names == expected);
  CHECK(env_of(c, "KTRAIN_RUN")["value"] == "demo-abcde");
  CHECK(env_of(c, "KTRAIN_NNODES")["value"] == "2");
  CHECK(env_of(c, "KTRAIN_NPROC_PER_NODE")["value"] == "auto");
  CHECK(env_of(c, "KTRAIN_GPUS")["value"] == "4");
  CHECK(env_of(c, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-0.demo-abcde");
  CHECK(env_of(c, "KTRAIN_RDZV_PORT")["value"] == "29400");
  CHECK(env_of(c, "KTRAIN_MASTER_PORT")["value"] == "29500");
  CHECK(env_of(c, "KTRAIN_RDZV_TIMEOUT")["value"] == "900");
  CHECK(env_of(c, "KTRAIN_FRAMEWORK")["value"] == "paddle");
  CHECK(env_of(c, "KTRAIN_PREFLIGHT")["value"] == "full");
  CHECK(env_of(c, "KTRAIN_GRACE_PERIOD")["value"] == "25");
  CHECK(env_of(c, "NCCL_DEBUG")["value"] == "WARN");
  CHECK(env_of(c, "KTRAIN_NODE_RANK").is_null());
}

TEST_CASE("render: the rank and the pod IP come from the downward API, the secret by reference") {
  auto r = render_fixed(train_project());
  const auto& c = container_of(object_of(r, "Job"));
  CHECK(env_of(c, "JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  CHECK(env_of(c, "KTRAIN_POD_IP")["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP");
  const auto secret = env_of(c, "KTRAIN_RDZV_SECRET")["valueFrom"]["secretKeyRef"];
  // Optional: without it (applied as rendered, no Secret) the Job's uid keys the rendezvous.
  CHECK(secret ==
        ordered_json({{"name", "demo-abcde-rdzv"}, {"key", "token"}, {"optional", true}}));
  CHECK(env_of(c, "KTRAIN_RDZV_JOB_UID")["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.labels['batch.kubernetes.io/controller-uid']");
  CHECK(env_of(c, "KTRAIN_NPROC_PER_NODE")["value"] == "1");
}

TEST_CASE("render: processesPerNode sets KTRAIN_NPROC_PER_NODE instead of auto") {
  auto p = train_project();
  p.train->gpus = 8;
  p.train->processes_per_node = 2;
  auto r = render_fixed(p);
  CHECK(env_of(container_of(object_of(r, "Job")), "KTRAIN_NPROC_PER_NODE")["value"] == "2");
}

TEST_CASE("render: envFrom references secrets and configMaps in file order") {
  auto p = train_project();
  p.train->env_from = {{project::EnvFrom::Kind::kSecret, "wandb"},
                       {project::EnvFrom::Kind::kConfigMap, "hparams"}};
  auto r = render_fixed(p);
  const auto& from = container_of(object_of(r, "Job"))["envFrom"];
  CHECK(from == ordered_json::array({{{"secretRef", {{"name", "wandb"}}}},
                                     {{"configMapRef", {{"name", "hparams"}}}}}));
}

TEST_CASE("render: pod and container security contexts") {
  auto p = train_project();
  p.security.run_as_user = 1000;
  p.security.run_as_group = 100;
  p.security.fs_group = 2000;
  p.security.add_capabilities = {"IPC_LOCK"};
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["securityContext"]["runAsNonRoot"] == true);
  CHECK(pod["securityContext"]["runAsUser"] == 1000);
  CHECK(pod["securityContext"]["runAsGroup"] == 100);
  CHECK(pod["securityContext"]["fsGroup"] == 2000);
  const auto& sc = pod["containers"][0]["securityContext"];
  CHECK(sc["allowPrivilegeEscalation"] == false);
  CHECK(sc["capabilities"]["drop"] == ordered_json::array({"ALL"}));
  CHECK(sc["capabilities"]["add"] == ordered_json::array({"IPC_LOCK"}));
}

TEST_CASE(
    "render: without added capabilities, all are dropped and none added; root can be allowed") {
  auto p = train_project();
  p.security.run_as_non_root = false;
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["securityContext"]["runAsNonRoot"] == false);
  CHECK_FALSE(pod["securityContext"].contains("runAsUser"));
  const auto& caps = pod["containers"][0]["securityContext"]["capabilities"];
  CHECK(caps["drop"] == ordered_json::array({"ALL"}));
  CHECK_FALSE(caps.contains("add"));
}

TEST_CASE("render: ttl, deadline and restarts become the Job's ttl, deadline and backoffLimit") {
  auto p = train_project();
  p.train->ttl_s = 7 * 86400;
  p.train->deadline_s = 86400;
  p.train->restarts = 3;
  auto r = render_fixed(p);
  const auto& spec = object_of(r, "Job")["spec"];
  CHECK(spec["ttlSecondsAfterFinished"] == 604800);
  CHECK(spec["activeDeadlineSeconds"] == 86400);
  CHECK(spec["backoffLimit"] == 3);
}

TEST_CASE(
    "render: without ttl and deadline those fields are left out; backoffLimit defaults to 0") {
  auto r = render_fixed(train_project());
  const auto& spec = object_of(r, "Job")["spec"];
  CHECK_FALSE(spec.contains("ttlSecondsAfterFinished"));
  CHECK_FALSE(spec.contains("activeDeadlineSeconds"));
  CHECK(spec["backoffLimit"] == 0);
}

TEST_CASE(
    "render: the pod failure policy ignores peer-stopped pods (75) and disruptions, and fails "
    "the run on the launcher's configuration error (78)") {
  auto r = render_fixed(train_project());
  const auto& rules = object_of(r, "Job")["spec"]["podFailurePolicy"]["rules"];
  REQUIRE(rules.size() == 3);
  CHECK(rules[0]["action"] == "Ignore");
  CHECK(rules[0]["onExitCodes"] ==
        ordered_json({{"containerName", "train"}, {"operator", "In"}, {"values", {75}}}));
  CHECK(rules[1]["action"] == "Ignore");
  CHECK(rules[1]["onPodConditions"] ==
        ordered_json::array({{{"type", "DisruptionTarget"}, {"status", "True"}}}));
  CHECK(rules[2]["action"] == "FailJob");
  CHECK(rules[2]["onExitCodes"] ==
        ordered_json({{"containerName", "train"}, {"operator", "In"}, {"values", {78}}}));
}

TEST_CASE(
    "render: train.retry's rules come first, in order; 'other exit codes' leaves out "
    "every code a rule names") {
  auto p = train_project();
  p.train->restarts = 2;
  using M = project::RetryRule::Match;
  p.train->retry = {{M::kExitCodes, {137, 143}, "retry"},
                    {M::kDisruption, {}, "retry-free"},
                    {M::kExitCodes, {3}, "fail"},
                    {M::kOtherExitCodes, {}, "retry-free"}};
  auto r = render_fixed(p);
  const auto& rules = object_of(r, "Job")["spec"]["podFailurePolicy"]["rules"];
  REQUIRE(rules.size() == 7);
  CHECK(rules[0] ==
        ordered_json({{"action", "Count"},
                      {"onExitCodes",
                       {{"containerName", "train"}, {"operator", "In"}, {"values", {137, 143}}}}}));
  CHECK(rules[1] ==
        ordered_json({{"action", "Ignore"},
                      {"onPodConditions", {{{"type", "DisruptionTarget"}, {"status", "True"}}}}}));
  CHECK(rules[2]["action"] == "FailJob");
  CHECK(rules[2]["onExitCodes"]["values"] == ordered_json({3}));
  CHECK(rules[3]["action"] == "Ignore");
  CHECK(rules[3]["onExitCodes"] == ordered_json({{"containerName", "train"},
                                                 {"operator", "NotIn"},
                                                 {"values", {0, 3, 75, 78, 137, 143}}}));
  // ktrain's own rules follow.
  CHECK(rules[4]["onExitCodes"]["values"] == ordered_json({75}));
  CHECK(rules[6]["onExitCodes"]["values"] == ordered_json({78}));

  // A JobSet's Job has the same rules, and a FailJob fails the set instead of restarting it.
  p.train->target = "jobset";
  auto js = render_fixed(p);
  const auto& spec = object_of(js, "JobSet")["spec"];
  CHECK(spec["replicatedJobs"][0]["template"]["spec"]["podFailurePolicy"]["rules"] == rules);
  CHECK(spec["failurePolicy"] ==
        ordered_json({{"maxRestarts", 2},
                      {"rules",
                       {{{"name", "PodFailurePolicyFailJob"},
                         {"action", "FailJobSet"},
                         {"onJobFailureReasons", {"PodFailurePolicy"}}}}}}));
}

TEST_CASE("render: every object and pod carries ktrain's labels and the project's") {
  auto p = train_project();
  p.labels = {{"team", "vision"}, {"ktrain.dev/run", "ignored"}};
  p.scheduling.gang = "volcano";
  auto r = render_fixed(p);
  REQUIRE(r.objects.size() == 3);
  for (const auto& o : r.objects) {
    const auto& l = o["metadata"]["labels"];
    CHECK(l["app.kubernetes.io/name"] == "demo");
    CHECK(l["app.kubernetes.io/managed-by"] == "ktrain");
    CHECK(l["ktrain.dev/run"] == "demo-abcde");
    CHECK(l["team"] == "vision");
    CHECK_FALSE(l.contains("ktrain.dev/sweep"));
  }
  const auto& pod_labels = object_of(r, "Job")["spec"]["template"]["metadata"]["labels"];
  CHECK(pod_labels["ktrain.dev/run"] == "demo-abcde");
  CHECK(pod_labels["team"] == "vision");
}

TEST_CASE("render: the namespace is set when the project gives one, else left out") {
  auto p = train_project();
  auto r = render_fixed(p);
  for (const auto& o : r.objects) CHECK_FALSE(o["metadata"].contains("namespace"));
  p.namespace_ = "ml-team-a";
  r = render_fixed(p);
  for (const auto& o : r.objects) CHECK(o["metadata"]["namespace"] == "ml-team-a");
}

TEST_CASE("render: gpuType and nodeSelector become the pod's nodeSelector") {
  auto p = train_project();
  p.train->gpus = 8;
  p.train->gpu_type = "NVIDIA-H100-80GB-HBM3";
  p.scheduling.node_selector = {{"topology.kubernetes.io/zone", "us-east-1a"}};
  p.scheduling.priority = "high";
  p.scheduling.runtime_class = "nvidia";
  p.image.pull_secrets = {"regcred"};
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["nodeSelector"] == ordered_json({{"topology.kubernetes.io/zone", "us-east-1a"},
                                             {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}));
  CHECK(pod["priorityClassName"] == "high");
  CHECK(pod["runtimeClassName"] == "nvidia");
  CHECK(pod["imagePullSecrets"] == ordered_json::array({{{"name", "regcred"}}}));
}

TEST_CASE("render: a queue puts Kueue's queue-name label on the Job only") {
  auto p = train_project();
  p.scheduling.queue = "team-a";
  p.scheduling.gang = "kueue";
  auto r = render_fixed(p);
  const auto& job = object_of(r, "Job");
  CHECK(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a");
  CHECK_FALSE(job["spec"]["template"]["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
  CHECK_FALSE(object_of(r, "Service")["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
  CHECK_FALSE(job["spec"].contains("suspend"));  // Kueue's webhook suspends the Job itself
  CHECK(count_of(r, "PodGroup") == 0);
  CHECK(r.warnings.empty());
}

TEST_CASE("render: gang kueue without a queue is a warning") {
  auto p = train_project();
  p.scheduling.gang = "kueue";
  auto r = render_fixed(p);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("scheduling.queue") != std::string::npos);
}

TEST_CASE("render: gang volcano adds a PodGroup of all nodes and points the pods at it") {
  auto p = train_project();
  p.train->nodes = 4;
  p.train->gpus = 8;
  p.train->cpu = "500m";
  p.train->memory = "64Gi";
  p.scheduling.gang = "volcano";
  p.scheduling.queue = "research";
  p.scheduling.priority = "high";
  auto r = render_fixed(p);
  REQUIRE(r.objects.size() == 3);
  CHECK(r.objects[0]["kind"] == "PodGroup");
  const auto& pg = r.objects[0];
  CHECK(pg["apiVersion"] == "scheduling.volcano.sh/v1beta1");
  CHECK(pg["metadata"]["name"] == "demo-abcde");
  CHECK(pg["spec"]["minMember"] == 4);
  CHECK(pg["spec"]["minResources"] ==
        ordered_json({{"cpu", "2000m"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "32"}}));
  CHECK(pg["spec"]["queue"] == "research");
  CHECK(pg["spec"]["priorityClassName"] == "high");
  const auto& job = object_of(r, "Job");
  CHECK(job["spec"]["template"]["spec"]["schedulerName"] == "volcano");
  CHECK(job["spec"]["template"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] ==
        "demo-abcde");
  CHECK_FALSE(job["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
}

TEST_CASE("render: without volcano the pods use the default scheduler and no annotations") {
  auto r = render_fixed(train_project());
  const auto& tmpl = object_of(r, "Job")["spec"]["template"];
  CHECK_FALSE(tmpl["spec"].contains("schedulerName"));
  CHECK_FALSE(tmpl["metadata"].contains("annotations"));
}

TEST_CASE("render: multiply_quantity keeps suffixes and decimals") {
  CHECK(multiply_quantity("500m", 4) == "2000m");
  CHECK(multiply_quantity("1.5", 3) == "4.5");
  CHECK(multiply_quantity("0.25", 4) == "1");
  CHECK(multiply_quantity("64Gi", 4) == "256Gi");
  CHECK(multiply_quantity("8", 1) == "8");
  CHECK(multiply_quantity("1e3", 2) == "2e3");
  CHECK(multiply_quantity(".5", 3) == "1.5");
  CHECK_THROWS_AS(multiply_quantity("16GB", 2), Error);
  CHECK_THROWS_AS(multiply_quantity("", 2), Error);
  CHECK_THROWS_AS(multiply_quantity(".", 2), Error);
  CHECK_THROWS_AS(multiply_quantity("1.2.3", 2), Error);
  CHECK_THROWS_AS(multiply_quantity("5e", 2), Error);
  CHECK_THROWS_AS(multiply_quantity("5Xi", 2), Error);
  CHECK(multiply_quantity("5.", 2) == "10");
  CHECK(multiply_quantity("2E-1", 2) == "4E-1");
}

TEST_CASE("render: train.gracePeriod is the pod's grace; the launcher gives its workers less") {
  auto p = train_project();
  auto r = render_fixed(p);
  auto pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["terminationGracePeriodSeconds"] == 30);
  CHECK(env_of(container_of(object_of(r, "Job")), "KTRAIN_GRACE_PERIOD")["value"] == "25");

  p.train->grace_period_s = 300;
  r = render_fixed(p);
  pod = object_of(r, "Job")["spec"]["template"]["spec"];
  CHECK(pod["terminationGracePeriodSeconds"] == 300);
  CHECK(env_of(container_of(object_of(r, "Job")), "KTRAIN_GRACE_PERIOD")["value"] == "295");

  CHECK(project::launcher_grace_seconds(20) == 15);
  CHECK(project::launcher_grace_seconds(21) == 16);
  CHECK(project::launcher_grace_seconds(4) == 3);
  CHECK(project::launcher_grace_seconds(1) == 1);
}

TEST_CASE("render: the volume marked checkpoint is KTRAIN_CHECKPOINT_DIR, before the user's env") {
  auto p = train_project();
  p.train->volumes = {{project::Volume::Kind::kClaim, "data", "/data", true, false},
                      {project::Volume::Kind::kClaim, "ckpt", "/ckpt", false, true}};
  p.train->env = {{"A", "1"}};
  auto r = render_fixed(p);
  const auto& c = container_of(object_of(r, "Job"));
  CHECK(env_of(c, "KTRAIN_CHECKPOINT_DIR")["value"] == "/ckpt");
  std::vector<std::string> names;
  for (const auto& e : c["env"]) names.push_back(e["name"]);
  const auto at = [&names](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  CHECK(at("KTRAIN_CHECKPOINT_DIR") == at("KTRAIN_GRACE_PERIOD") + 1);
  CHECK(at("KTRAIN_CHECKPOINT_DIR") < at("A"));  // the user's env can name another folder

  p.train->volumes[1].checkpoint = false;
  r = render_fixed(p);
  CHECK_FALSE(env_of(container_of(object_of(r, "Job")), "KTRAIN_CHECKPOINT_DIR").is_object());
}

TEST_CASE("render: train.cuda keeps GPU pods off nodes whose driver is too old") {
  auto p = train_project();
  p.train->gpus = 8;
  p.train->cuda = "12.1";
  auto r = render_fixed(p);
  const auto& job = object_of(r, "Job");
  const auto& tmpl = job["spec"]["template"];
  CHECK(tmpl["metadata"]["annotations"]["ktrain.dev/cuda"] == "12.1");
  const auto& terms = tmpl["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  REQUIRE(terms.size() == 5);
  CHECK(terms[0]["matchExpressions"][0] ==
        nlohmann::ordered_json{{"key", "nvidia.com/cuda.runtime-version.major"},
                               {"operator", "Gt"},
                               {"values", {"12"}}});
  const auto& c = container_of(job);
  CHECK(env_of(c, "KTRAIN_CUDA_VERSION")["value"] == "12.1");
  CHECK(env_of(c, "KTRAIN_NODE_NAME")["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName");

  // Without GPUs the version reaches the launcher, and scheduling is left alone.
  p.train->gpus = 0;
  auto cpu = render_fixed(p);
  const auto& cpu_job = object_of(cpu, "Job");
  CHECK_FALSE(cpu_job["spec"]["template"]["spec"].contains("affinity"));
  CHECK(env_of(container_of(cpu_job), "KTRAIN_CUDA_VERSION")["value"] == "12.1");

  // Unknown: neither.
  p.train->gpus = 8;
  p.train->cuda = "";
  auto unknown = render_fixed(p);
  const auto& u = object_of(unknown, "Job");
  CHECK_FALSE(u["spec"]["template"]["spec"].contains("affinity"));
  for (const auto& e : container_of(u)["env"]) CHECK(e["name"] != "KTRAIN_CUDA_VERSION");
}

TEST_CASE("render: a variable of train.env that ktrain sets too replaces ktrain's (one entry)") {
  auto p = train_project();
  p.train->volumes = {{project::Volume::Kind::kClaim, "ckpt", "/ckpt", false, true}};
  p.train->env = {{"KTRAIN_GPUS", "1"}, {"KTRAIN_CHECKPOINT_DIR", "/elsewhere"}, {"A", "1"}};
  auto r = render_fixed(p);
  const auto& c = container_of(object_of(r, "Job"));
  std::map<std::string, int> count;
  for (const auto& e : c["env"]) ++count[e["name"].get<std::string>()];
  for (const auto& [name, n] : count) {
    CAPTURE(name);
    CHECK(n == 1);  // server-side apply refuses a name twice
  }
  CHECK(env_of(c, "KTRAIN_GPUS")["value"] == "1");
  CHECK(env_of(c, "KTRAIN_CHECKPOINT_DIR")["value"] == "/elsewhere");
  CHECK(env_of(c, "A")["value"] == "1");
}
