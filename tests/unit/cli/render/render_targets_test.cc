// train.target and serve.target: each renderer's object, and what the operators need
// of it (their container names, replica layout, rank wiring and run policy).

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "project/targets.h"
#include "render/render.h"
#include "render/targets/targets.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

namespace {

project::Project train_for(const std::string& target, int nodes = 3) {
  auto p = train_project();
  p.train->target = target;
  p.train->nodes = nodes;
  p.train->gpus = 8;
  if (target == "tfjob") p.train->framework = "tensorflow";
  return p;
}

/// The pod template of a replica type of a Kubeflow job.
const ordered_json& replica_pod(const ordered_json& job, const std::string& specs,
                                const std::string& type) {
  return job.at("spec").at(specs).at(type).at("template");
}

const ordered_json& first_container(const ordered_json& pod_template) {
  return pod_template.at("spec").at("containers").at(0);
}

}  // namespace

TEST_CASE("targets: every train.target value has a renderer, and each renders its own kind") {
  const std::pair<const char*, const char*> kinds[] = {{"job", "Job"},
                                                       {"pytorchjob", "PyTorchJob"},
                                                       {"tfjob", "TFJob"},
                                                       {"mpijob", "MPIJob"},
                                                       {"jobset", "JobSet"}};
  for (const auto& [target, kind] : kinds) {
    CAPTURE(target);
    auto r = render_fixed(train_for(target));
    CHECK(count_of(r, kind) == 1);
    CHECK(targets::train_target(target).api.kind == std::string(kind));
    CHECK(object_of(r, kind)["metadata"]["name"] == "demo-abcde");
    CHECK(object_of(r, kind)["metadata"]["labels"]["ktrain.dev/run"] == "demo-abcde");
  }
  CHECK(targets::train_targets().size() == 6);
  CHECK(targets::serve_targets().size() == 3);
  CHECK_THROWS_AS(targets::train_target("slurm"), Error);
}

TEST_CASE("targets: only the plain Job gets ktrain's headless Service; operators make their own") {
  CHECK(count_of(render_fixed(train_for("job")), "Service") == 1);
  for (const char* t : {"pytorchjob", "tfjob", "mpijob", "jobset"}) {
    CAPTURE(t);
    CHECK(count_of(render_fixed(train_for(t)), "Service") == 0);
  }
}

TEST_CASE("targets: pytorchjob is a Master (node 0) and nodes - 1 Workers ranked after it") {
  auto r = render_fixed(train_for("pytorchjob", 4));
  const auto& job = object_of(r, "PyTorchJob");
  CHECK(job["apiVersion"] == "kubeflow.org/v1");
  const auto& specs = job["spec"]["pytorchReplicaSpecs"];
  CHECK(specs["Master"]["replicas"] == 1);
  CHECK(specs["Worker"]["replicas"] == 3);
  CHECK(specs["Master"]["restartPolicy"] == "Never");
  const auto& master = first_container(replica_pod(job, "pytorchReplicaSpecs", "Master"));
  const auto& worker = first_container(replica_pod(job, "pytorchReplicaSpecs", "Worker"));
  // The operator sets MASTER_ADDR, WORLD_SIZE and RANK in the container called pytorch.
  CHECK(master["name"] == "pytorch");
  CHECK(worker["name"] == "pytorch");
  CHECK(master["command"][0] == "/opt/ktrain/bin/ktrain-launch");
  CHECK(env_of(master, "KTRAIN_NODE_RANK")["value"] == "0");
  CHECK(env_of(worker, "KTRAIN_NODE_RANK")["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.labels['training.kubeflow.org/replica-index']");
  CHECK(env_of(worker, "KTRAIN_NODE_RANK_OFFSET")["value"] == "1");
  CHECK(env_of(worker, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-master-0");
  CHECK(env_of(worker, "JOB_COMPLETION_INDEX").is_null());
  // ktrain does not set what the operator sets.
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"}) {
    CHECK(env_of(worker, name).is_null());
  }
  // Stock images: the launcher is injected into every replica's pods.
  CHECK(replica_pod(job, "pytorchReplicaSpecs", "Worker")["spec"]["initContainers"][0]["name"] ==
        kLauncherContainer);
}

TEST_CASE("targets: an elastic pytorchjob is min..max Workers with the operator's elasticPolicy") {
  auto p = train_for("pytorchjob", 8);
  p.train->min_nodes = 2;
  p.train->restarts = 2;
  auto r = render_fixed(p);
  const auto& job = object_of(r, "PyTorchJob");
  const auto& ep = job["spec"]["elasticPolicy"];
  CHECK(ep["rdzvBackend"] == "c10d");
  CHECK(ep["minReplicas"] == 2);
  CHECK(ep["maxReplicas"] == 8);
  CHECK(ep["maxRestarts"] == 2);
  const auto& specs = job["spec"]["pytorchReplicaSpecs"];
  CHECK_FALSE(specs.contains("Master"));
  CHECK(specs["Worker"]["replicas"] == 8);
  const auto& worker = first_container(replica_pod(job, "pytorchReplicaSpecs", "Worker"));
  CHECK(env_of(worker, "KTRAIN_ELASTIC")["value"] == "2:8");
  CHECK(env_of(worker, "KTRAIN_ELASTIC_RESTARTS")["value"] == "2");
  CHECK(env_of(worker, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-worker-0");
  CHECK(env_of(worker, "KTRAIN_NODE_RANK_OFFSET").is_null());
  // torchrun's c10d store needs no rendezvous Secret: the pods do not wait for one.
  CHECK(env_of(worker, "KTRAIN_RDZV_SECRET")["valueFrom"]["secretKeyRef"]["optional"] == true);
  // A fixed count has no elasticPolicy.
  const auto fixed = render_fixed(train_for("pytorchjob", 8));
  CHECK_FALSE(object_of(fixed, "PyTorchJob")["spec"].contains("elasticPolicy"));
}

TEST_CASE("targets: a one-node pytorchjob has a Master alone") {
  auto r = render_fixed(train_for("pytorchjob", 1));
  const auto& specs = object_of(r, "PyTorchJob")["spec"]["pytorchReplicaSpecs"];
  CHECK(specs.contains("Master"));
  CHECK_FALSE(specs.contains("Worker"));
}

TEST_CASE("targets: the operators' run policy carries retries, deadline, TTL and gang scheduling") {
  auto p = train_for("pytorchjob", 2);
  p.train->restarts = 3;
  p.train->deadline_s = 3600;
  p.train->ttl_s = 600;
  p.train->cpu = "8";
  p.scheduling.gang = "volcano";
  p.scheduling.queue = "research";
  p.scheduling.priority = "high";
  auto r = render_fixed(p);
  const auto& rp = object_of(r, "PyTorchJob")["spec"]["runPolicy"];
  CHECK(rp["backoffLimit"] == 3);
  CHECK(rp["activeDeadlineSeconds"] == 3600);
  CHECK(rp["ttlSecondsAfterFinished"] == 600);
  CHECK(rp["cleanPodPolicy"] == "None");
  CHECK(rp["schedulingPolicy"]["minAvailable"] == 2);
  CHECK(rp["schedulingPolicy"]["queue"] == "research");
  CHECK(rp["schedulingPolicy"]["priorityClass"] == "high");
  CHECK(rp["schedulingPolicy"]["minResources"]["nvidia.com/gpu"] == "16");
  CHECK(rp["schedulingPolicy"]["minResources"]["cpu"] == "16");
  // The operator makes the PodGroup: ktrain renders none, and the pods do not name one.
  CHECK(count_of(r, "PodGroup") == 0);
  const auto& pod = replica_pod(object_of(r, "PyTorchJob"), "pytorchReplicaSpecs", "Worker");
  const bool names_group = pod["metadata"].contains("annotations") &&
                           pod["metadata"]["annotations"].contains(kAnnotationVolcanoGroup);
  CHECK_FALSE(names_group);
  CHECK(pod["spec"]["schedulerName"] == "volcano");
}

TEST_CASE(
    "targets: Kueue's queue label goes on the operator's object, and a waiting run is suspended") {
  auto p = train_for("tfjob", 2);
  p.scheduling.gang = "kueue";
  p.scheduling.queue = "team-a";
  p.train->sweep = {{"lr", {"0.1", "0.01"}}};
  p.train->sweep_parallel = 1;
  auto r = render_fixed(p);
  REQUIRE(count_of(r, "TFJob") == 2);
  const auto& first = object_of(r, "TFJob", 0);
  const auto& second = object_of(r, "TFJob", 1);
  CHECK(first["metadata"]["labels"][kLabelKueueQueue] == "team-a");
  CHECK_FALSE(first["spec"]["runPolicy"].contains("suspend"));
  CHECK_FALSE(second["metadata"]["labels"].contains(kLabelKueueQueue));
  CHECK(second["metadata"]["labels"][kLabelQueued] == "true");
  CHECK(second["metadata"]["annotations"][kAnnotationQueue] == "team-a");
  CHECK(second["spec"]["runPolicy"]["suspend"] == true);
  CHECK(second["metadata"]["annotations"][kAnnotationParams] == R"({"lr":"0.01"})");
}

TEST_CASE(
    "targets: tfjob is nodes Workers, ranked by their replica index, worker 0 the rendezvous") {
  auto r = render_fixed(train_for("tfjob", 3));
  const auto& job = object_of(r, "TFJob");
  CHECK(job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3);
  CHECK_FALSE(job["spec"]["tfReplicaSpecs"].contains("Chief"));
  const auto& c = first_container(replica_pod(job, "tfReplicaSpecs", "Worker"));
  CHECK(c["name"] == "tensorflow");
  CHECK(env_of(c, "KTRAIN_NODE_RANK")["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.labels['training.kubeflow.org/replica-index']");
  CHECK(env_of(c, "KTRAIN_NODE_RANK_OFFSET").is_null());
  CHECK(env_of(c, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-worker-0");
  CHECK(env_of(c, "TF_CONFIG").is_null());
}

TEST_CASE(
    "targets: mpijob runs the command in the Launcher, and the Workers hold the GPUs and slots") {
  auto p = train_for("mpijob", 2);
  p.train->command = {"mpirun", "-np", "16", "python", "train.py"};
  p.train->cpu = "16";
  auto r = render_fixed(p);
  const auto& job = object_of(r, "MPIJob");
  CHECK(job["spec"]["slotsPerWorker"] == 8);
  const auto& specs = job["spec"]["mpiReplicaSpecs"];
  CHECK(specs["Launcher"]["replicas"] == 1);
  CHECK(specs["Worker"]["replicas"] == 2);
  const auto& launcher = first_container(replica_pod(job, "mpiReplicaSpecs", "Launcher"));
  const auto& worker = first_container(replica_pod(job, "mpiReplicaSpecs", "Worker"));
  CHECK(launcher["command"] == ordered_json::array({"mpirun", "-np", "16", "python", "train.py"}));
  CHECK_FALSE(launcher.contains("resources"));
  CHECK_FALSE(worker.contains("command"));  // the operator keeps the Workers waiting for mpirun
  CHECK(worker["resources"]["limits"]["nvidia.com/gpu"] == "8");
  // mpirun, not ktrain-launch: no injection, no rendezvous secret.
  CHECK_FALSE(replica_pod(job, "mpiReplicaSpecs", "Worker")["spec"].contains("initContainers"));
  CHECK(env_of(worker, "KTRAIN_RDZV_SECRET").is_null());
  CHECK(env_of(worker, "KTRAIN_RUN")["value"] == "demo-abcde");
  p.train->processes_per_node = 4;
  CHECK(object_of(render_fixed(p), "MPIJob")["spec"]["slotsPerWorker"] == 4);
}

TEST_CASE("targets: jobset is one replicated Indexed Job; hosts <run>-node-0-<rank>.<run>") {
  auto p = train_for("jobset", 4);
  p.train->restarts = 2;
  p.train->ttl_s = 60;
  p.train->deadline_s = 7200;
  auto r = render_fixed(p);
  const auto& js = object_of(r, "JobSet");
  CHECK(js["apiVersion"] == "jobset.x-k8s.io/v1alpha2");
  CHECK(js["spec"]["failurePolicy"]["maxRestarts"] == 2);
  CHECK(js["spec"]["ttlSecondsAfterFinished"] == 60);
  CHECK(js["spec"]["network"]["enableDNSHostnames"] == true);
  const auto& rj = js["spec"]["replicatedJobs"].at(0);
  CHECK(rj["name"] == "node");
  CHECK(rj["replicas"] == 1);
  const auto& job = rj["template"]["spec"];
  CHECK(job["completionMode"] == "Indexed");
  CHECK(job["completions"] == 4);
  CHECK(job["parallelism"] == 4);
  CHECK(job["backoffLimit"] == 0);
  CHECK(job["activeDeadlineSeconds"] == 7200);
  CHECK(job.contains("podFailurePolicy"));
  const auto& c = first_container(job["template"]);
  CHECK(c["name"] == "train");
  CHECK(env_of(c, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-node-0-0.demo-abcde");
  CHECK(env_of(c, "JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  CHECK_FALSE(job["template"]["spec"].contains("subdomain"));  // JobSet sets it
}

TEST_CASE("targets: trainjob sets the trainer's fields and patches the runtime's pods") {
  auto p = train_for("trainjob", 2);
  p.launcher.inject = project::Launcher::Inject::kNever;
  p.train->cpu = "4";
  p.train->shm = "8Gi";
  p.train->deadline_s = 600;
  p.scheduling.node_selector = {{"pool", "gpu"}};
  auto r = render_fixed(p);
  const auto& tj = object_of(r, "TrainJob");
  CHECK(tj["apiVersion"] == "trainer.kubeflow.org/v1alpha1");
  CHECK(tj["spec"]["runtimeRef"]["name"] == "torch-distributed");
  CHECK(tj["spec"]["activeDeadlineSeconds"] == 600);
  const auto& trainer = tj["spec"]["trainer"];
  CHECK(trainer["numNodes"] == 2);
  CHECK(trainer["image"] == "registry.example.com/ml/demo:v1");
  CHECK(trainer["command"][0] == "/opt/ktrain/bin/ktrain-launch");
  CHECK(trainer["args"][0] == "python");
  CHECK(trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "8");
  CHECK(env_of(trainer, "KTRAIN_MASTER_ADDR")["value"] == "demo-abcde-node-0-0.demo-abcde");
  const auto& patch = tj["spec"]["runtimePatches"].at(0);
  CHECK(patch["manager"] == "ktrain.dev/ktrain");
  const auto& rj = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"].at(0);
  CHECK(rj["name"] == "node");
  const auto& pod = rj["template"]["spec"]["template"];
  CHECK(pod["metadata"]["labels"]["ktrain.dev/run"] == "demo-abcde");
  CHECK(pod["spec"]["nodeSelector"]["pool"] == "gpu");
  CHECK(pod["spec"]["volumes"].at(0)["name"] == "dshm");
  CHECK(pod["spec"]["containers"].at(0)["name"] == "node");
  CHECK(pod["spec"]["containers"].at(0)["volumeMounts"].at(0)["mountPath"] == "/dev/shm");
  // What a patch may not set is not there.
  for (const char* key : {"restartPolicy", "subdomain", "initContainers"}) {
    CAPTURE(key);
    CHECK_FALSE(pod["spec"].contains(key));
  }
  p.train->runtime = "deepspeed-distributed";
  CHECK(object_of(render_fixed(p), "TrainJob")["spec"]["runtimeRef"]["name"] ==
        "deepspeed-distributed");
}

TEST_CASE("targets: trainjob of a stock image runs on a TrainingRuntime of its own") {
  // A runtime patch cannot add a container with an image (the CRD's ContainerPatch has
  // none): the run's own TrainingRuntime holds the pod, the launcher's init container in it.
  auto p = train_for("trainjob", 2);  // a stock image: the launcher is injected
  const auto r = render_fixed(p);
  REQUIRE(r.objects.size() == 2);
  const auto& rt = r.objects[0];
  CHECK(rt["kind"] == "TrainingRuntime");
  CHECK(rt["apiVersion"] == "trainer.kubeflow.org/v1alpha1");
  const std::string run = rt["metadata"]["name"];
  CHECK(rt["spec"]["mlPolicy"]["numNodes"] == 2);
  const auto& rj = rt["spec"]["template"]["spec"]["replicatedJobs"][0];
  CHECK(rj["name"] == "node");
  CHECK(rj["template"]["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] ==
        "trainer");
  const auto& pod = rj["template"]["spec"]["template"]["spec"];
  REQUIRE(pod["initContainers"].is_array());
  CHECK(pod["initContainers"][0]["command"][1] == "--install");
  CHECK(pod["containers"][0]["name"] == "node");
  CHECK(pod["containers"][0]["command"][0] == "/opt/ktrain/bin/ktrain-launch");
  const auto& tj = object_of(r, "TrainJob");
  CHECK(tj["spec"]["runtimeRef"] ==
        ordered_json(
            {{"apiGroup", "trainer.kubeflow.org"}, {"kind", "TrainingRuntime"}, {"name", run}}));
  CHECK_FALSE(tj["spec"].contains("runtimePatches"));
  CHECK(tj["spec"]["trainer"]["numNodes"] == 2);
  // With the launcher in the image, the cluster's runtime, patched, as before.
  p.launcher.inject = project::Launcher::Inject::kNever;
  const auto r2 = render_fixed(p);
  REQUIRE(r2.objects.size() == 1);
  CHECK(object_of(r2, "TrainJob")["spec"]["runtimeRef"] ==
        ordered_json({{"name", "torch-distributed"}}));
}

TEST_CASE("targets: serve.target kserve puts the project's container in the predictor") {
  auto p = serve_project();
  p.serve->target = "kserve";
  p.serve->gpus = 1;
  p.serve->readiness = project::Probe{"/healthz"};
  p.serve->autoscale = project::Autoscale{2, 6, 70, std::nullopt};
  p.serve->cpu = "2";
  auto r = render_fixed(p);
  // KServe makes the Deployment, Service and autoscaler; ktrain the disruption budget.
  REQUIRE(r.objects.size() == 2);
  CHECK(object_of(r, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]["ktrain.dev/run"] ==
        "api");
  const auto& isvc = object_of(r, "InferenceService");
  CHECK(isvc["apiVersion"] == "serving.kserve.io/v1beta1");
  const auto& pred = isvc["spec"]["predictor"];
  CHECK(pred["minReplicas"] == 2);
  CHECK(pred["maxReplicas"] == 6);
  CHECK(pred["scaleMetric"] == "cpu");
  CHECK(pred["scaleTarget"] == 70);
  CHECK(pred["labels"]["ktrain.dev/run"] == "api");
  CHECK(pred["deploymentStrategy"]["rollingUpdate"]["maxUnavailable"] == 0);
  CHECK(r.warnings.empty());
  p.serve->cpu.clear();
  CHECK(render_fixed(p).warnings.at(0).find("serve.autoscale.cpu is set but serve.cpu") == 0);
  CHECK(pred["securityContext"]["runAsNonRoot"] == true);
  const auto& c = pred["containers"].at(0);
  CHECK(c["name"] == "kserve-container");
  CHECK(c["ports"].at(0)["containerPort"] == 8080);
  CHECK(c["readinessProbe"]["httpGet"]["path"] == "/healthz");
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "1");
}

TEST_CASE("targets: serve.runtime triton and vllm use KServe's runtimes on serve.model") {
  auto p = serve_project();
  p.serve->target = "kserve";
  p.serve->command.clear();
  p.serve->runtime = "triton";
  p.serve->model_uri = "s3://models/resnet";
  p.serve->replicas = 3;
  auto model = object_of(render_fixed(p), "InferenceService")["spec"]["predictor"]["model"];
  CHECK(model["runtime"] == "kserve-tritonserver");
  CHECK(model["modelFormat"]["name"] == "triton");
  CHECK(model["storageUri"] == "s3://models/resnet");
  CHECK_FALSE(model.contains("image"));
  p.serve->runtime = "vllm";
  p.serve->model_uri = "hf://meta-llama/Llama-3.1-8B-Instruct";
  const auto pred = object_of(render_fixed(p), "InferenceService")["spec"]["predictor"];
  CHECK(pred["minReplicas"] == 3);
  CHECK(pred["maxReplicas"] == 3);
  CHECK_FALSE(pred.contains("containers"));
  CHECK(pred["model"]["runtime"] == "kserve-huggingfaceserver");
  CHECK(pred["model"]["modelFormat"]["name"] == "huggingface");
  CHECK(pred["model"]["args"] == ordered_json::array({"--backend=vllm"}));
  p.serve->model_format = "onnx";
  CHECK(object_of(render_fixed(p),
                  "InferenceService")["spec"]["predictor"]["model"]["modelFormat"]["name"] ==
        "onnx");
}

TEST_CASE(
    "targets: serve.target lws groups a leader and nodes - 1 workers; the Service finds leaders") {
  auto p = serve_project();
  p.serve->target = "lws";
  p.serve->nodes = 4;
  p.serve->gpus = 8;
  p.serve->readiness = project::Probe{"/health"};
  p.serve->autoscale = project::Autoscale{1, 3, 80, std::nullopt};
  p.serve->cpu = "16";
  auto r = render_fixed(p);
  const auto& lws = object_of(r, "LeaderWorkerSet");
  CHECK(lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1");
  CHECK(lws["spec"]["replicas"] == 1);
  const auto& group = lws["spec"]["leaderWorkerTemplate"];
  CHECK(group["size"] == 4);
  CHECK(group["restartPolicy"] == "RecreateGroupOnPodRestart");
  const auto& leader = first_container(group["leaderTemplate"]);
  const auto& worker = first_container(group["workerTemplate"]);
  CHECK(leader["readinessProbe"]["httpGet"]["path"] == "/health");
  CHECK(leader["ports"].at(0)["containerPort"] == 8080);
  CHECK_FALSE(worker.contains("readinessProbe"));
  CHECK_FALSE(worker.contains("ports"));
  CHECK(worker["resources"]["limits"]["nvidia.com/gpu"] == "8");
  const auto& svc = object_of(r, "Service");
  CHECK(svc["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0");
  const auto& hpa = object_of(r, "HorizontalPodAutoscaler");
  CHECK(hpa["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet");
  CHECK(hpa["spec"]["scaleTargetRef"]["apiVersion"] == "leaderworkerset.x-k8s.io/v1");
  CHECK(count_of(r, "Deployment") == 0);
  CHECK(count_of(r, "PodDisruptionBudget") == 0);  // one group: no budget
  p.serve->autoscale->min = 2;
  CHECK(object_of(render_fixed(p), "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] ==
        ordered_json({{"ktrain.dev/run", "api"}}));
}

TEST_CASE("targets: each needs its operator's CRD, named for the missing-CRD message") {
  CHECK(std::string(targets::train_target("job").api.crd).empty());
  CHECK(std::string(targets::serve_target("deployment").api.crd).empty());
  CHECK(std::string(targets::train_target("pytorchjob").api.crd) == "pytorchjobs.kubeflow.org");
  CHECK(std::string(targets::train_target("jobset").api.crd) == "jobsets.jobset.x-k8s.io");
  CHECK(std::string(targets::serve_target("kserve").api.crd) ==
        "inferenceservices.serving.kserve.io");
  for (const auto* t : targets::train_targets()) {
    CAPTURE(t->name);
    const std::string crd = t->api.crd;
    if (crd.empty()) continue;
    CHECK(crd.rfind(std::string(t->api.plural) + ".", 0) == 0);
    CHECK_FALSE(std::string(t->api.install).empty());
  }
}

TEST_CASE("targets: the longest pod host name is the target's, within 63 characters") {
  auto p = train_for("jobset", 16);
  p.name = std::string(40, 'a');
  // <name>-<id>-node-0-15: 40 + 1 + 12 + 10 = 63.
  CHECK_NOTHROW(validate_run_id(p, "abcdefghijkl"));
  CHECK_THROWS_WITH_AS(validate_run_id(p, "abcdefghijklm"),
                       doctest::Contains("-abcdefghijklm-node-0-15' would exceed 63"), UsageError);
  p.train->target = "job";  // <name>-<id>-15
  CHECK_NOTHROW(validate_run_id(p, "abcdefghijklm"));
  p.train->target = "tfjob";  // <name>-<id>-worker-15
  CHECK_THROWS_WITH_AS(validate_run_id(p, "abcdefghijklm"),
                       doctest::Contains("-abcdefghijklm-worker-15' would exceed 63"), UsageError);
}
