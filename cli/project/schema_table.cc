#include "project/schema_table.h"

#include <stdexcept>

namespace ktrain::project {

namespace {

using K = ValueKind;

std::vector<SectionSpec> make_sections() {
  const std::vector<std::string> frameworks = {"pytorch", "paddle", "tensorflow", "jax", "none"};
  return {
      {"project",
       "A ktrain project file: one training job (train), one inference service (serve), or both.",
       {
           {.name = "name",
            .kind = K::kDnsLabel,
            .required = true,
            .max_length = 40,
            .description = "The project's name: a DNS-1123 label of at most 40 characters; runs "
                           "are named <name>-<run id>.",
            .example = R"("resnet50")"},
           {.name = "namespace",
            .kind = K::kDnsLabel,
            .max_length = 63,
            .description = "The namespace to run in. Default: the -n flag, else the kubeconfig "
                           "context's namespace, else default.",
            .example = R"("ml-team-a")"},
           {.name = "labels",
            .kind = K::kProjectLabels,
            .description = "Kubernetes labels added to every rendered object (keys under "
                           "ktrain.dev/ and app.kubernetes.io/name, /managed-by are ktrain's).",
            .example = R"({"team": "vision"})"},
           {.name = "image",
            .kind = K::kImage,
            .section = "image",
            .required = true,
            .description = "The image to run (registry/path:tag), or a map with ref, pullSecrets "
                           "and build.",
            .example = R"("registry.example.com/ml/resnet50:v3")"},
           {.name = "train",
            .section = "train",
            .description = "The training job: an Indexed Job with one pod per node and a headless "
                           "Service.",
            .example = R"({"command": ["python", "train.py"]})"},
           {.name = "scheduling",
            .section = "scheduling",
            .description = "Where and how the pods are scheduled: queue, gang, priority, node "
                           "selector, tolerations.",
            .example = R"({"queue": "team-a"})"},
           {.name = "security",
            .section = "security",
            .description = "The pods' user, group and capabilities.",
            .example = R"({"runAsUser": 1000})"},
           {.name = "launcher",
            .section = "launcher",
            .description = "How the training container gets ktrain-launch.",
            .example = R"({"inject": "auto"})"},
           {.name = "serve",
            .section = "serve",
            .description = "The inference service: a Deployment, a Service and, with autoscale, "
                           "a HorizontalPodAutoscaler.",
            .example = R"({"command": ["python", "serve.py"], "port": 8080})"},
           {.name = "patches",
            .kind = K::kPatches,
            .values = {"Job", "Service", "Deployment", "HorizontalPodAutoscaler", "PodGroup",
                       "PodDisruptionBudget", "PyTorchJob", "TFJob", "MPIJob", "TrainJob", "JobSet",
                       "InferenceService", "LeaderWorkerSet"},
            .description = "RFC 7386 JSON merge patches, by rendered kind, applied to every "
                           "object of that kind after rendering.",
            .example = R"({"Service": {"metadata": {"annotations": {"team": "vision"}}}})"},
       }},
      {"image",
       "The image to run, and how ktrain build makes it.",
       {
           {.name = "ref",
            .kind = K::kImage,
            .description = "The image to run; may be left out when build is given.",
            .example = R"("registry.example.com/ml/resnet50:v3")"},
           {.name = "pullSecrets",
            .kind = K::kDnsSubdomain,
            .list = true,
            .max_length = 253,
            .description = "Names of the secrets to pull the image with.",
            .example = R"(["regcred"])"},
           {.name = "build",
            .section = "build",
            .description = "How ktrain build makes the image.",
            .example = R"({"base": "python:3.12", "repository": "registry.example.com/ml/app"})"},
       }},
      {"build",
       "How ktrain build makes the image: a base image, the project's files, a repository.",
       {
           {.name = "base",
            .kind = K::kImage,
            .required = true,
            .description = "The image to build on.",
            .example = R"("nvcr.io/nvidia/pytorch:24.08-py3")"},
           {.name = "repository",
            .kind = K::kRepository,
            .required = true,
            .description = "Where to push, without a tag or digest (ktrain build pushes by "
                           "digest).",
            .example = R"("registry.example.com/ml/resnet50")"},
           {.name = "context",
            .kind = K::kText,
            .description = "The folder to copy, relative to the project file's folder. "
                           "Default: that folder.",
            .example = R"(".")"},
           {.name = "ignore",
            .kind = K::kText,
            .list = true,
            .description = "Patterns of files to leave out, added to .ktrainignore and "
                           ".dockerignore.",
            .example = R"(["data/", "*.ckpt"])"},
           {.name = "workdir",
            .kind = K::kAbsolutePath,
            .description = "Where the files go in the image, an absolute path. Default: "
                           "/workspace.",
            .example = R"("/workspace")"},
           {.name = "env",
            .kind = K::kEnvMap,
            .description = "Environment variables baked into the image.",
            .example = R"({"PYTHONUNBUFFERED": "1"})"},
       }},
      {"train",
       "The training job.",
       {
           {.name = "command",
            .kind = K::kScalar,
            .list = true,
            .min_items = 1,
            .required = true,
            .description = "The worker command, started by ktrain-launch once per worker "
                           "process; {param} is replaced by a sweep parameter's value.",
            .example = R"(["python", "train.py", "--epochs", "90"])"},
           {.name = "framework",
            .kind = K::kEnum,
            .values = frameworks,
            .description = "Which launcher environment the workers get. Default: pytorch.",
            .example = R"("pytorch")"},
           {.name = "target",
            .kind = K::kEnum,
            .values = {"job", "pytorchjob", "tfjob", "mpijob", "trainjob", "jobset"},
            .description = "What the run is rendered to: job (an Indexed Job, the default; "
                           "needs no operator), pytorchjob, tfjob or mpijob (Kubeflow Training "
                           "Operator), trainjob (Kubeflow Trainer), jobset (JobSet).",
            .example = R"("pytorchjob")"},
           {.name = "runtime",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "target trainjob: the ClusterTrainingRuntime to run on. Default "
                           "with framework pytorch: torch-distributed.",
            .example = R"("torch-distributed")"},
           {.name = "nodes",
            .kind = K::kNodeCount,
            .min = 1,
            .description = "Pods, one ktrain-launch each; min..max (like 2..8) for elastic "
                           "nodes, with target pytorchjob. Default: 1.",
            .example = "4"},
           {.name = "gpus",
            .kind = K::kWhole,
            .min = 0,
            .description = "GPUs per node (nvidia.com/gpu limits and requests); one worker per "
                           "GPU. Default: 0.",
            .example = "8"},
           {.name = "processesPerNode",
            .kind = K::kWhole,
            .min = 1,
            .description = "Workers per node. Default: one per GPU found (1 without GPUs).",
            .example = "2"},
           {.name = "mig",
            .kind = K::kMigProfile,
            .description = "A MIG profile such as 1g.10gb: the GPUs become "
                           "nvidia.com/mig-<profile> slices. Needs gpus > 0.",
            .example = R"("1g.10gb")"},
           {.name = "gpuType",
            .kind = K::kGpuProduct,
            .description = "A GPU product, rendered as the node selector nvidia.com/gpu.product.",
            .example = R"("NVIDIA-H100-80GB-HBM3")"},
           {.name = "cuda",
            .kind = K::kCudaVersion,
            .description = "The CUDA version the image needs, like 12.1: pods go only to nodes "
                           "whose driver runs it. Default: read from the image.",
            .example = "12.1"},
           {.name = "cpu",
            .kind = K::kQuantity,
            .description = "CPU per node, a Kubernetes quantity (requests and limits).",
            .example = R"("32")"},
           {.name = "memory",
            .kind = K::kQuantity,
            .description = "Memory per node, a Kubernetes quantity (requests and limits).",
            .example = R"("256Gi")"},
           {.name = "shm",
            .kind = K::kQuantity,
            .description = "The size of a memory-backed /dev/shm.",
            .example = R"("64Gi")"},
           {.name = "env",
            .kind = K::kEnvMap,
            .description = "Environment variables of the workers.",
            .example = R"({"NCCL_DEBUG": "WARN"})"},
           {.name = "envFrom",
            .kind = K::kEnvFrom,
            .list = true,
            .description = "Secrets and config maps whose keys all become environment "
                           "variables: secret/NAME or configMap/NAME.",
            .example = R"(["secret/wandb", "configMap/hparams"])"},
           {.name = "volumes",
            .section = "volume",
            .list = true,
            .description = "Volumes to mount: each a claim, configMap, secret or emptyDir, with "
                           "a mount path.",
            .example = R"([{"claim": "imagenet", "mount": "/data", "readOnly": true}])"},
           {.name = "restarts",
            .kind = K::kWhole,
            .min = 0,
            .description = "Whole-job retries (backoffLimit). Default: 0.",
            .example = "3"},
           {.name = "retry",
            .section = "retry",
            .list = true,
            .description = "What a failed pod's exit code or disruption does, first matching "
                           "rule first (the Job's podFailurePolicy): fail the run at once, "
                           "retry (counted against restarts) or retry-free (not counted).",
            .example = R"([{"exitCodes": [137, 143], "action": "retry-free"}, )"
                       R"({"otherExitCodes": true, "action": "fail"}])"},
           {.name = "deadline",
            .kind = K::kDuration,
            .min = 1,
            .description = "How long the job may run (activeDeadlineSeconds), like 24h; units "
                           "s, m, h, d.",
            .example = R"("24h")"},
           {.name = "ttl",
            .kind = K::kDuration,
            .description = "How long a finished job is kept (ttlSecondsAfterFinished), like 7d.",
            .example = R"("7d")"},
           {.name = "gracePeriod",
            .kind = K::kDuration,
            .min = 1,
            .description = "From SIGTERM (stop, delete, preemption) to SIGKILL "
                           "(terminationGracePeriodSeconds): the time to save a checkpoint. "
                           "Default: 30s.",
            .example = R"("2m")"},
           {.name = "watchdog",
            .section = "watchdog",
            .description = "The hang watchdog of ktrain-launch: a worker with no output and no "
                           "touch of KTRAIN_HEARTBEAT_FILE for `timeout` is hung; the pod "
                           "fails with exit 74 (see train.retry).",
            .example = R"({"timeout": "15m"})"},
           {.name = "notify",
            .section = "notify",
            .description = "When `submit --wait` (or --follow) sees a run end: a command to "
                           "run and/or a webhook to POST to, with the run's name, state and "
                           "exit code.",
            .example = R"({"command": "notify-send \"$KTRAIN_RUN $KTRAIN_STATE\""})"},
           {.name = "sync",
            .kind = K::kBoolean,
            .description = "true: `ktrain submit` first pushes what changed in the workspace "
                           "since the last build here as one thin layer on it (as `submit "
                           "--sync`), so that local edits run without a rebuild. Needs "
                           "image.build.",
            .example = "true"},
           {.name = "preflight",
            .kind = K::kEnum,
            .values = {"off", "quick", "full"},
            .description = "The GPU and NCCL checks ktrain-launch runs before the workers. "
                           "Default: quick.",
            .example = R"("quick")"},
           {.name = "sweep",
            .kind = K::kSweep,
            .description = "A grid of parameters, one run per combination (at most 1000); each "
                           "value reaches its run as KTRAIN_PARAM_<NAME> and {name}. "
                           "`parallel: N` runs at most N at once.",
            .example = R"({"lr": ["0.1", "0.01"], "parallel": 1})"},
       }},
      {"notify",
       "What to do when a waited-for run ends.",
       {
           {.name = "command",
            .kind = K::kText,
            .description = "Run with /bin/sh -c, with KTRAIN_RUN, KTRAIN_NAMESPACE, "
                           "KTRAIN_STATE and KTRAIN_EXIT_CODE set (--on-finish overrides it).",
            .example = R"("echo \"$KTRAIN_RUN: $KTRAIN_STATE\" | mail -s ktrain me@example.com")"},
           {.name = "url",
            .kind = K::kText,
            .description = "An http(s) URL that gets {run, namespace, state, exitCode, text} as "
                           "JSON (a Slack incoming webhook shows the text).",
            .example = R"("https://hooks.slack.com/services/T000/B000/XXXX")"},
       }},
      {"watchdog",
       "The hang watchdog.",
       {
           {.name = "timeout",
            .kind = K::kDuration,
            .required = true,
            .min = 1,
            .description = "How long a worker may go with no output and no heartbeat: at least "
                           "1m (start-up prints little), like 15m.",
            .example = R"("15m")"},
       }},
      {"retry",
       "A retry rule: exactly one of exitCodes, otherExitCodes or disruption, and an action.",
       {
           {.name = "exitCodes",
            .kind = K::kWhole,
            .list = true,
            .min_items = 1,
            .min = 1,
            .max = 255,
            .description = "Exit codes of the train container (ktrain-launch's: a worker's own "
                           "status, 128+signal, or the launcher's 74-79).",
            .example = "[137, 143]"},
           {.name = "otherExitCodes",
            .kind = K::kBoolean,
            .description = "true: any exit code that no rule names (ktrain's own rules "
                           "included). Last of the exit-code rules.",
            .example = "true"},
           {.name = "disruption",
            .kind = K::kBoolean,
            .description = "true: the cluster took the pod (preemption, eviction, node loss: "
                           "the DisruptionTarget condition).",
            .example = "true"},
           {.name = "action",
            .kind = K::kEnum,
            .required = true,
            .values = {"fail", "retry", "retry-free"},
            .description = "fail: the run fails at once; retry: a new pod, counted against "
                           "train.restarts; retry-free: a new pod, not counted.",
            .example = R"("retry")"},
       }},
      {"volume",
       "A volume: exactly one of claim, configMap, secret or emptyDir, and a mount path.",
       {
           {.name = "claim",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "A PersistentVolumeClaim.",
            .example = R"("imagenet")"},
           {.name = "configMap",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "A ConfigMap.",
            .example = R"("train-config")"},
           {.name = "secret",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "A Secret.",
            .example = R"("tls-certs")"},
           {.name = "emptyDir",
            .kind = K::kEmptyDir,
            .description = "An empty folder for the pod's lifetime: {} (or true).",
            .example = "{}"},
           {.name = "mount",
            .kind = K::kAbsolutePath,
            .required = true,
            .description = "Where to mount it: an absolute path, without '..' or ':'.",
            .example = R"("/data")"},
           {.name = "readOnly",
            .kind = K::kBoolean,
            .description = "Mount it read-only. Default: false.",
            .example = "true"},
           {.name = "checkpoint",
            .kind = K::kBoolean,
            .description = "This volume keeps checkpoints: KTRAIN_CHECKPOINT_DIR names its "
                           "mount path (at most one volume). Default: false.",
            .example = "true"},
       }},
      {"scheduling",
       "Where and how the pods are scheduled.",
       {
           {.name = "queue",
            .kind = K::kDnsSubdomain,
            .max_length = 63,
            .description = "A Kueue LocalQueue (the label kueue.x-k8s.io/queue-name).",
            .example = R"("team-a")"},
           {.name = "gang",
            .kind = K::kEnum,
            .values = {"none", "kueue", "volcano"},
            .description = "Gang scheduling: kueue (needs queue) or volcano (a PodGroup). "
                           "Default: none.",
            .example = R"("volcano")"},
           {.name = "priority",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "A PriorityClass name.",
            .example = R"("high")"},
           {.name = "nodeSelector",
            .kind = K::kLabelMap,
            .description = "Node labels the pods need.",
            .example = R"({"topology.kubernetes.io/zone": "us-east-1a"})"},
           {.name = "tolerations",
            .kind = K::kToleration,
            .section = "toleration",
            .list = true,
            .description = "Tolerations: key=value:Effect, key:Effect or key strings, or maps. "
                           "When given, GPU pods get no default nvidia.com/gpu toleration.",
            .example = R"(["nvidia.com/gpu:NoSchedule", "dedicated=ml:NoSchedule"])"},
           {.name = "runtimeClass",
            .kind = K::kDnsSubdomain,
            .max_length = 253,
            .description = "A RuntimeClass name, such as nvidia.",
            .example = R"("nvidia")"},
           {.name = "managedBy",
            .kind = K::kDomainPath,
            .max_length = 63,
            .description = "The controller that runs the workload instead of its own "
                           "(spec.managedBy): kueue.x-k8s.io/multikueue dispatches it to "
                           "another cluster (needs queue).",
            .example = R"("kueue.x-k8s.io/multikueue")"},
       }},
      {"toleration",
       "A toleration of a node taint.",
       {
           {.name = "key",
            .kind = K::kTaintKey,
            .description = "The taint key; needed unless operator is Exists.",
            .example = R"("nvidia.com/gpu")"},
           {.name = "operator",
            .kind = K::kEnum,
            .values = {"Equal", "Exists"},
            .description = "Equal (the default) matches key and value; Exists any value.",
            .example = R"("Exists")"},
           {.name = "value",
            .kind = K::kLabelValue,
            .description = "The taint value, with operator Equal.",
            .example = R"("ml")"},
           {.name = "effect",
            .kind = K::kEnum,
            .values = {"NoSchedule", "PreferNoSchedule", "NoExecute"},
            .description = "The taint effect to tolerate; all when left out.",
            .example = R"("NoExecute")"},
           {.name = "tolerationSeconds",
            .kind = K::kWhole,
            .min = 0,
            .max = std::numeric_limits<std::int64_t>::max(),
            .description = "How long the pod stays after the taint appears; only with effect "
                           "NoExecute.",
            .example = "300"},
       }},
      {"security",
       "The pods' user, group and capabilities; allowPrivilegeEscalation is always false.",
       {
           {.name = "runAsUser",
            .kind = K::kWhole,
            .min = 0,
            .max = 2147483647,
            .description = "The user id. Default, with runAsNonRoot: 1000.",
            .example = "1000"},
           {.name = "runAsGroup",
            .kind = K::kWhole,
            .min = 0,
            .max = 2147483647,
            .description = "The group id. Default, with runAsNonRoot: 1000.",
            .example = "1000"},
           {.name = "fsGroup",
            .kind = K::kWhole,
            .min = 0,
            .max = 2147483647,
            .description = "The group that owns the volumes. Default, with runAsNonRoot: 1000.",
            .example = "1000"},
           {.name = "runAsNonRoot",
            .kind = K::kBoolean,
            .description = "Refuse to run as root. Default: true; false runs as the image's "
                           "user.",
            .example = "true"},
           {.name = "addCapabilities",
            .kind = K::kCapability,
            .list = true,
            .description = "Linux capabilities to add, such as IPC_LOCK; all others are "
                           "dropped.",
            .example = R"(["IPC_LOCK"])"},
       }},
      {"launcher",
       "How the training container gets ktrain-launch.",
       {
           {.name = "image",
            .kind = K::kImage,
            .description = "The launcher image to copy ktrain-launch from. Default: "
                           "$KTRAIN_LAUNCHER_IMAGE, else ghcr.io/ktrain/ktrain-launch:<version>.",
            .example = R"("registry.example.com/ktrain/ktrain-launch:0.1.0")"},
           {.name = "inject",
            .kind = K::kEnum,
            .values = {"auto", "always", "never"},
            .description = "auto (the default): an init container copies it unless image.build "
                           "made the image; always; never.",
            .example = R"("auto")"},
       }},
      {"serve",
       "The inference service.",
       {
           {.name = "command",
            .kind = K::kScalar,
            .list = true,
            .min_items = 1,
            .description = "The server command. Default: the image's entrypoint.",
            .example = R"(["python", "serve.py"])"},
           {.name = "port",
            .kind = K::kWhole,
            .min = 1,
            .max = 65535,
            .description = "The port the server listens on; required unless runtime is given.",
            .example = "8080"},
           {.name = "target",
            .kind = K::kEnum,
            .values = {"deployment", "kserve", "lws"},
            .description = "What the service is rendered to: deployment (the default), kserve "
                           "(a KServe InferenceService) or lws (a LeaderWorkerSet: a model "
                           "served across nodes).",
            .example = R"("kserve")"},
           {.name = "runtime",
            .kind = K::kEnum,
            .values = {"triton", "vllm"},
            .description = "target kserve: serve model.uri with KServe's Triton or vLLM "
                           "runtime instead of the project's container.",
            .example = R"("triton")"},
           {.name = "model",
            .section = "model",
            .description = "target kserve with a runtime: where the model is, and its format.",
            .example = R"({"uri": "s3://models/resnet50"})"},
           {.name = "nodes",
            .kind = K::kWhole,
            .min = 1,
            .description = "target lws: pods per replica, a leader and nodes - 1 workers. "
                           "Default: 1.",
            .example = "2"},
           {.name = "gpus",
            .kind = K::kWhole,
            .min = 0,
            .description = "GPUs per replica. Default: 0.",
            .example = "1"},
           {.name = "gpuType",
            .kind = K::kGpuProduct,
            .description = "A GPU product, rendered as the node selector nvidia.com/gpu.product.",
            .example = R"("NVIDIA-L4")"},
           {.name = "cuda",
            .kind = K::kCudaVersion,
            .description = "The CUDA version the image needs, like 12.1: pods go only to nodes "
                           "whose driver runs it. Default: read from the image.",
            .example = "12.1"},
           {.name = "cpu",
            .kind = K::kQuantity,
            .description = "CPU per replica, a Kubernetes quantity (requests and limits).",
            .example = R"("4")"},
           {.name = "memory",
            .kind = K::kQuantity,
            .description = "Memory per replica, a Kubernetes quantity (requests and limits).",
            .example = R"("16Gi")"},
           {.name = "shm",
            .kind = K::kQuantity,
            .description = "The size of a memory-backed /dev/shm.",
            .example = R"("1Gi")"},
           {.name = "env",
            .kind = K::kEnvMap,
            .description = "Environment variables of the server.",
            .example = R"({"MODEL_NAME": "resnet50"})"},
           {.name = "envFrom",
            .kind = K::kEnvFrom,
            .list = true,
            .description = "Secrets and config maps whose keys all become environment "
                           "variables: secret/NAME or configMap/NAME.",
            .example = R"(["secret/hf-token"])"},
           {.name = "volumes",
            .section = "volume",
            .list = true,
            .description = "Volumes to mount, as in train.volumes.",
            .example = R"([{"claim": "models", "mount": "/models", "readOnly": true}])"},
           {.name = "replicas",
            .kind = K::kWhole,
            .min = 0,
            .description = "A fixed replica count; not with autoscale.",
            .example = "2"},
           {.name = "autoscale",
            .section = "autoscale",
            .description = "A HorizontalPodAutoscaler; not with replicas.",
            .example = R"({"min": 2, "max": 20, "cpu": 70})"},
           {.name = "readiness",
            .kind = K::kHttpPath,
            .section = "probe",
            .description = "The readiness probe: an HTTP path such as /healthz, or a map.",
            .example = R"({"path": "/healthz"})"},
           {.name = "liveness",
            .kind = K::kHttpPath,
            .section = "probe",
            .description = "The liveness probe: an HTTP path such as /healthz, or a map.",
            .example = R"("/livez")"},
           {.name = "startup",
            .kind = K::kHttpPath,
            .section = "probe",
            .description = "The startup probe, which holds the others back until it succeeds. "
                           "Default, with readiness or liveness: 30 minutes of tries.",
            .example = R"({"path": "/healthz", "failureThreshold": 60})"},
           {.name = "rollout",
            .section = "rollout",
            .description = "The rolling update: maxSurge (default 1) and maxUnavailable (default "
                           "0).",
            .example = R"({"maxSurge": 1, "maxUnavailable": 0})"},
           {.name = "spread",
            .kind = K::kBoolean,
            .description = "Spread replicas over nodes (topologySpreadConstraints). Default: "
                           "true.",
            .example = "true"},
           {.name = "disruption",
            .kind = K::kBoolean,
            .description = "A PodDisruptionBudget (maxUnavailable 1) with 2 or more replicas. "
                           "Default: true.",
            .example = "true"},
       }},
      {"model",
       "The model a KServe runtime serves.",
       {
           {.name = "uri",
            .kind = K::kText,
            .required = true,
            .description = "Where the model is: s3://, gs://, pvc://, hf:// or https:// "
                           "(KServe's storageUri).",
            .example = R"("s3://models/resnet50")"},
           {.name = "format",
            .kind = K::kText,
            .description = "The model format the runtime loads. Default: triton for triton, "
                           "huggingface for vllm.",
            .example = R"("onnx")"},
       }},
      {"autoscale",
       "A HorizontalPodAutoscaler for the service.",
       {
           {.name = "min",
            .kind = K::kWhole,
            .min = 1,
            .description = "The fewest replicas, at most max. Default: 1.",
            .example = "2"},
           {.name = "max",
            .kind = K::kWhole,
            .required = true,
            .min = 1,
            .description = "The most replicas.",
            .example = "20"},
           {.name = "cpu",
            .kind = K::kWhole,
            .min = 1,
            .max = 100,
            .description = "The target average CPU utilisation, in percent.",
            .example = "70"},
           {.name = "metric",
            .section = "metric",
            .description = "A Pods metric from the custom metrics API, and its average target "
                           "per pod.",
            .example = R"({"name": "DCGM_FI_DEV_GPU_UTIL", "target": "70"})"},
       }},
      {"metric",
       "A Pods metric of the custom metrics API.",
       {
           {.name = "name",
            .kind = K::kMetricName,
            .required = true,
            .description = "The metric, such as DCGM_FI_DEV_GPU_UTIL.",
            .example = R"("DCGM_FI_DEV_GPU_UTIL")"},
           {.name = "target",
            .kind = K::kQuantity,
            .required = true,
            .description = "The average value per pod, a quantity.",
            .example = R"("70")"},
       }},
      {"probe",
       "An HTTP GET probe.",
       {
           {.name = "path",
            .kind = K::kHttpPath,
            .required = true,
            .description = "The HTTP path to probe, starting with /.",
            .example = R"("/healthz")"},
           {.name = "port",
            .kind = K::kWhole,
            .min = 1,
            .max = 65535,
            .description = "The port to probe. Default: serve.port.",
            .example = "8081"},
           {.name = "initialDelaySeconds",
            .kind = K::kWhole,
            .min = 0,
            .description = "Seconds before the first probe. Default: 0.",
            .example = "5"},
           {.name = "periodSeconds",
            .kind = K::kWhole,
            .min = 1,
            .description = "Seconds between probes. Default: 10.",
            .example = "10"},
           {.name = "failureThreshold",
            .kind = K::kWhole,
            .min = 1,
            .description = "Failures in a row that count. Default: 3.",
            .example = "3"},
       }},
      {"rollout",
       "The service's rolling update; maxSurge and maxUnavailable are not both 0.",
       {
           {.name = "maxSurge",
            .kind = K::kSurge,
            .description = "Replicas above the count during a rollout: a number or a "
                           "percentage. Default: 1.",
            .example = R"("25%")"},
           {.name = "maxUnavailable",
            .kind = K::kSurge,
            .description = "Replicas that may be missing during a rollout: a number or a "
                           "percentage. Default: 0.",
            .example = "0"},
       }},
  };
}

void add_paths(const std::string& path, const SectionSpec& s,
               std::vector<std::pair<std::string, const SectionSpec*>>& out) {
  out.emplace_back(path, &s);
  for (const auto& k : s.keys) {
    if (k.section.empty()) continue;
    std::string child = path.empty() ? k.name : path + "." + k.name;
    if (k.list) child += "[]";
    add_paths(child, project_section(k.section), out);
  }
}

}  // namespace

const std::vector<SectionSpec>& project_sections() {
  static const std::vector<SectionSpec> sections = make_sections();
  return sections;
}

const SectionSpec& project_section(std::string_view name) {
  for (const auto& s : project_sections())
    if (s.name == name) return s;
  throw std::out_of_range("no section " + std::string(name) + " in the project table");
}

const KeySpec& project_key(std::string_view section, std::string_view key) {
  for (const auto& k : project_section(section).keys)
    if (k.name == key) return k;
  throw std::out_of_range("no key " + std::string(key) + " in section " + std::string(section));
}

std::vector<std::string> key_names(std::string_view section) {
  std::vector<std::string> out;
  for (const auto& k : project_section(section).keys) out.push_back(k.name);
  return out;
}

std::vector<std::pair<std::string, const SectionSpec*>> section_paths() {
  std::vector<std::pair<std::string, const SectionSpec*>> out;
  add_paths("", project_sections().front(), out);
  return out;
}

std::vector<std::string> free_form_map_paths() {
  std::vector<std::string> out;
  for (const auto& [path, s] : section_paths()) {
    for (const auto& k : s->keys) {
      if (k.kind == ValueKind::kEnvMap || k.kind == ValueKind::kLabelMap ||
          k.kind == ValueKind::kProjectLabels)
        out.push_back(path.empty() ? k.name : path + "." + k.name);
    }
  }
  return out;
}

}  // namespace ktrain::project
