#include "render/workloads.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/cuda.h"
#include "base/error.h"

namespace ktrain::render::detail {

namespace {

using nlohmann::ordered_json;

/// The container called `name` in pod spec `pod`; appended when the skeleton has none.
ordered_json& container_named(ordered_json& pod, const std::string& name) {
  auto& containers = pod["containers"];
  if (!containers.is_array()) containers = ordered_json::array();
  for (auto& c : containers) {
    if (c.is_object() && c.value("name", "") == name) return c;
  }
  containers.push_back({{"name", name}});
  return containers.back();
}

ordered_json env_value(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

ordered_json env_field(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

/// The GPU resource name: nvidia.com/gpu, or nvidia.com/mig-<profile> with `mig`.
std::string gpu_resource(const std::string& mig) {
  return mig.empty() ? "nvidia.com/gpu" : "nvidia.com/mig-" + mig;
}

/// requests = limits: cpu and memory when given, GPUs when > 0. Null when nothing is set.
ordered_json resources(const std::string& cpu, const std::string& memory, int gpus,
                       const std::string& mig) {
  ordered_json list = ordered_json::object();
  if (!cpu.empty()) list["cpu"] = cpu;
  if (!memory.empty()) list["memory"] = memory;
  if (gpus > 0) list[gpu_resource(mig)] = std::to_string(gpus);
  if (list.empty()) return nullptr;
  return {{"limits", list}, {"requests", list}};
}

ordered_json toleration(const project::Toleration& t) {
  ordered_json o = ordered_json::object();
  if (!t.key.empty()) o["key"] = t.key;
  if (!t.op.empty()) o["operator"] = t.op;
  if (!t.value.empty() && t.op != "Exists") o["value"] = t.value;
  if (!t.effect.empty()) o["effect"] = t.effect;
  if (t.toleration_seconds) o["tolerationSeconds"] = *t.toleration_seconds;
  return o;
}

/// Scheduling and security of a pod spec, shared by train and serve.
void set_pod_common(ordered_json& pod, const project::Project& p, bool uses_gpus,
                    const std::string& gpu_type) {
  const auto& s = p.scheduling;
  if (!s.priority.empty()) pod["priorityClassName"] = s.priority;
  if (!s.runtime_class.empty()) pod["runtimeClassName"] = s.runtime_class;

  ordered_json selector = pod.value("nodeSelector", ordered_json());
  if (!selector.is_object()) selector = ordered_json::object();
  for (const auto& [k, v] : s.node_selector) selector[k] = v;
  if (!gpu_type.empty()) selector["nvidia.com/gpu.product"] = gpu_type;
  if (!selector.empty()) pod["nodeSelector"] = selector;

  ordered_json tolerations = ordered_json::array();
  for (const auto& t : s.tolerations) tolerations.push_back(toleration(t));
  if (!s.tolerations_set && uses_gpus) {
    tolerations.push_back(
        {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  }
  if (!tolerations.empty()) pod["tolerations"] = tolerations;

  if (!p.image.pull_secrets.empty()) {
    ordered_json secrets = ordered_json::array();
    for (const auto& name : p.image.pull_secrets) secrets.push_back({{"name", name}});
    pod["imagePullSecrets"] = secrets;
  }

  auto& sc = pod["securityContext"];
  if (!sc.is_object()) sc = ordered_json::object();
  sc["runAsNonRoot"] = p.security.run_as_non_root;
  if (auto u = p.security.user()) sc["runAsUser"] = *u;
  if (auto g = p.security.group()) sc["runAsGroup"] = *g;
  if (auto g = p.security.volume_group()) {
    sc["fsGroup"] = *g;
    // A volume already owned right (a big dataset claim) is not walked at every start.
    sc["fsGroupChangePolicy"] = "OnRootMismatch";
  }
}

/// Keeps a GPU pod on nodes whose driver runs CUDA `cuda` ("12.1"; "" = unknown: nothing
/// is added), by the labels of GPU feature discovery, and notes the version on the pod.
void set_cuda_affinity(ordered_json& pod, ordered_json& pod_meta, const std::string& cuda,
                       bool uses_gpus) {
  const auto need = parse_cuda_version(cuda);
  if (!need || !uses_gpus) return;
  pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms", cuda_node_terms(*need)}};
  pod_meta["annotations"][kAnnotationCuda] = need->str();
}

/// A writable HOME for a user that the image may not know (its HOME, often /root, is
/// not writable then): an emptyDir at kHome, set before the user's env, which wins.
constexpr const char* kHome = "/home/ktrain";

bool needs_home(const project::Project& p) {
  auto u = p.security.user();
  return u && *u != 0;
}

/// Adds the HOME volume to `pod` and its mount to the container `name`. (A key added
/// to an ordered_json object moves its other values: references into the pod taken
/// before this call are not to be used after it.)
void add_home_volume(ordered_json& pod, const std::string& name) {
  if (!pod["volumes"].is_array()) pod["volumes"] = ordered_json::array();
  pod["volumes"].push_back({{"name", "home"}, {"emptyDir", ordered_json::object()}});
  auto& container = container_named(pod, name);
  if (!container["volumeMounts"].is_array()) container["volumeMounts"] = ordered_json::array();
  container["volumeMounts"].push_back({{"name", "home"}, {"mountPath", kHome}});
}

/// The launcher for an image that lacks it: an init container copies the static
/// ktrain-launch from the launcher image (FROM scratch, no shell) into an emptyDir that
/// the training container mounts read-only at kLauncherDir. Called last, as
/// add_home_volume.
void add_launcher_injection(ordered_json& pod, const RenderContext& ctx,
                            const std::string& container_name) {
  if (!pod["volumes"].is_array()) pod["volumes"] = ordered_json::array();
  pod["volumes"].push_back({{"name", kLauncherContainer}, {"emptyDir", {{"sizeLimit", "64Mi"}}}});
  const ordered_json small = {{"cpu", "100m"}, {"memory", "64Mi"}};
  ordered_json init = {
      {"name", kLauncherContainer},
      {"image", ctx.launcher.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", ordered_json::array({"/ktrain-launch", "--install", kLauncherDir})},
      {"resources", {{"limits", small}, {"requests", small}}},
      {"volumeMounts",
       ordered_json::array({{{"name", kLauncherContainer}, {"mountPath", kLauncherDir}}})},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"capabilities", {{"drop", ordered_json::array({"ALL"})}}}}},
      {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  auto& inits = pod["initContainers"];
  if (!inits.is_array()) inits = ordered_json::array();
  inits.insert(inits.begin(), init);
  auto& container = container_named(pod, container_name);
  if (!container["volumeMounts"].is_array()) container["volumeMounts"] = ordered_json::array();
  container["volumeMounts"].push_back(
      {{"name", kLauncherContainer}, {"mountPath", kLauncherDir}, {"readOnly", true}});
}

/// The container's security context: no privilege escalation, every capability
/// dropped but those the project adds.
void set_container_security(ordered_json& container, const project::Project& p) {
  auto& sc = container["securityContext"];
  if (!sc.is_object()) sc = ordered_json::object();
  sc["allowPrivilegeEscalation"] = false;
  auto& caps = sc["capabilities"];
  if (!caps.is_object()) caps = ordered_json::object();
  caps["drop"] = ordered_json::array({"ALL"});
  if (!p.security.add_capabilities.empty()) {
    caps["add"] = p.security.add_capabilities;
  }
}

/// Appends the project's variables; one that ktrain sets too (KTRAIN_GPUS, HOME, a
/// sweep parameter, ...) replaces ktrain's: the last value wins, as a kubelet would take
/// it, and a container's env has each name once (server-side apply refuses duplicates).
void append_user_env(ordered_json& env, const project::StringPairs& pairs) {
  for (const auto& [k, v] : pairs) {
    for (auto it = env.begin(); it != env.end();) {
      it = it->value("name", "") == k ? env.erase(it) : it + 1;
    }
    env.push_back(env_value(k, v));
  }
}

const char* volume_prefix(project::Volume::Kind kind) {
  switch (kind) {
    case project::Volume::Kind::kClaim:
      return "claim";
    case project::Volume::Kind::kConfigMap:
      return "config";
    case project::Volume::Kind::kSecret:
      return "secret";
    case project::Volume::Kind::kEmptyDir:
      return "scratch";
  }
  return "volume";
}

/// The pod's volumes and the container's mounts of `train.volumes` (or
/// `serve.volumes`), then /dev/shm. Set the pod's before taking a reference to the
/// container: a key added to an ordered_json object moves its other values.
std::pair<ordered_json, ordered_json> volume_lists(const std::vector<project::Volume>& list,
                                                   const std::string& shm) {
  ordered_json volumes = ordered_json::array();
  ordered_json mounts = ordered_json::array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& v = list[i];
    const std::string name = std::string(volume_prefix(v.kind)) + "-" + std::to_string(i);
    ordered_json vol = {{"name", name}};
    bool read_only = v.read_only;
    switch (v.kind) {
      case project::Volume::Kind::kClaim: {
        ordered_json claim = {{"claimName", v.source}};
        if (v.read_only) claim["readOnly"] = true;
        vol["persistentVolumeClaim"] = claim;
        break;
      }
      case project::Volume::Kind::kConfigMap:
        vol["configMap"] = {{"name", v.source}};
        read_only = true;  // the kubelet mounts these read-only anyway; say so
        break;
      case project::Volume::Kind::kSecret:
        vol["secret"] = {{"secretName", v.source}};
        read_only = true;
        break;
      case project::Volume::Kind::kEmptyDir:
        vol["emptyDir"] = ordered_json::object();
        break;
    }
    volumes.push_back(vol);
    ordered_json mount = {{"name", name}, {"mountPath", v.mount}};
    if (read_only) mount["readOnly"] = true;
    mounts.push_back(mount);
  }
  if (!shm.empty()) {
    volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", shm}}}});
    mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  }
  return {volumes, mounts};
}

/// `envFrom` of the container from `train.envFrom` / `serve.envFrom`.
void set_env_from(ordered_json& container, const std::vector<project::EnvFrom>& list) {
  if (list.empty()) return;
  ordered_json from = ordered_json::array();
  for (const auto& e : list) {
    if (e.kind == project::EnvFrom::Kind::kSecret) {
      from.push_back({{"secretRef", {{"name", e.name}}}});
    } else {
      from.push_back({{"configMapRef", {{"name", e.name}}}});
    }
  }
  container["envFrom"] = from;
}

ordered_json probe(const project::Probe& pr, int default_port) {
  return {{"httpGet", {{"path", pr.path}, {"port", pr.port != 0 ? pr.port : default_port}}},
          {"initialDelaySeconds", pr.initial_delay_s},
          {"periodSeconds", pr.period_s},
          {"failureThreshold", pr.failure_threshold}};
}

ordered_json train_env(const project::Project& p, const std::string& run,
                       const project::SweepPoint& point, const TrainPodWiring& w) {
  const auto& t = *p.train;
  ordered_json env = ordered_json::array();
  env.push_back(env_value("KTRAIN_RUN", run));
  if (w.launched) {
    env.push_back(env_value("KTRAIN_NNODES", std::to_string(t.nodes)));
    for (const auto& e : w.rank_env) env.push_back(e);
    const std::string nproc = t.processes_per_node > 0 ? std::to_string(t.processes_per_node)
                              : t.gpus > 0             ? "auto"
                                                       : "1";
    env.push_back(env_value("KTRAIN_NPROC_PER_NODE", nproc));
    env.push_back(env_value("KTRAIN_GPUS", std::to_string(t.gpus)));
    env.push_back(env_value("KTRAIN_MASTER_ADDR", w.master_addr));
    env.push_back(env_value("KTRAIN_RDZV_PORT", std::to_string(kRdzvPort)));
    env.push_back(env_value("KTRAIN_MASTER_PORT", std::to_string(kMasterPort)));
    env.push_back(env_value("KTRAIN_RDZV_TIMEOUT", "900"));
    ordered_json secret_ref = {{"name", run + "-rdzv"}, {"key", "token"}};
    // One node has no rendezvous, elastic nodes meet at torchrun's: nothing waits for
    // the Secret then.
    if (w.job_uid_rendezvous || t.nodes == 1 || t.min_nodes > 0) secret_ref["optional"] = true;
    env.push_back({{"name", "KTRAIN_RDZV_SECRET"}, {"valueFrom", {{"secretKeyRef", secret_ref}}}});
    if (w.job_uid_rendezvous) {
      env.push_back(env_field("KTRAIN_RDZV_JOB_UID",
                              "metadata.labels['batch.kubernetes.io/controller-uid']"));
    }
    env.push_back(env_value("KTRAIN_FRAMEWORK", t.framework));
    env.push_back(env_value("KTRAIN_PREFLIGHT", t.preflight));
    env.push_back(env_value("KTRAIN_GRACE_PERIOD",
                            std::to_string(project::launcher_grace_seconds(t.grace_period_s))));
    if (t.watchdog_s > 0) {
      env.push_back(env_value("KTRAIN_WATCHDOG_TIMEOUT", std::to_string(t.watchdog_s)));
    }
  }
  if (auto dir = project::checkpoint_dir(t.volumes); !dir.empty()) {
    env.push_back(env_value("KTRAIN_CHECKPOINT_DIR", dir));
  }
  if (w.launched) {
    env.push_back(env_field("KTRAIN_POD_IP", "status.podIP"));
    env.push_back(env_field("KTRAIN_NODE_NAME", "spec.nodeName"));
    if (!t.cuda.empty()) env.push_back(env_value("KTRAIN_CUDA_VERSION", t.cuda));
  }
  for (const auto& [name, value] : point.params) {
    env.push_back(env_value(project::param_env_name(name), value));
  }
  if (needs_home(p)) env.push_back(env_value("HOME", kHome));
  append_user_env(env, t.env);
  return env;
}

}  // namespace

ordered_json env_from_field(const std::string& name, const std::string& path) {
  return env_field(name, path);
}

ordered_json env_literal(const std::string& name, const std::string& value) {
  return env_value(name, value);
}

std::string gpu_resource_name(const std::string& mig) {
  return gpu_resource(mig);
}

ordered_json container_resources(const std::string& cpu, const std::string& memory, int gpus,
                                 const std::string& mig) {
  return resources(cpu, memory, gpus, mig);
}

bool is_queued(const RenderContext& ctx, const std::string& run, const project::SweepPoint& point) {
  const auto& t = *ctx.project.train;
  return t.sweep_parallel > 0 && point.index >= t.sweep_parallel &&
         !(ctx.started && ctx.started->count(run));
}

ordered_json params_annotation(const project::SweepPoint& point) {
  ordered_json params = ordered_json::object();
  for (const auto& [name, value] : point.params) params[name] = value;
  return params.dump();
}

void set_run_metadata(const RenderContext& ctx, ordered_json& obj, const std::string& run,
                      const ordered_json& labels, const project::SweepPoint& point, bool queued) {
  const auto& s = ctx.project.scheduling;
  ordered_json l = labels;
  // Kueue would admit (and unsuspend) a waiting run that names its queue: the queue
  // label comes when the run is released (ktrain resume), from an annotation until then.
  const bool kueue = s.gang != "volcano" && !s.queue.empty();
  if (kueue && !queued) l[kLabelKueueQueue] = s.queue;
  if (queued) l[kLabelQueued] = "true";
  set_metadata(obj, ctx.project, run, l);
  if (kueue && queued) obj["metadata"]["annotations"][kAnnotationQueue] = s.queue;
  if (point.index >= 0)
    obj["metadata"]["annotations"][kAnnotationParams] = params_annotation(point);
}

ordered_json gang_min_resources(const project::Train& t) {
  ordered_json min = ordered_json::object();
  if (!t.cpu.empty()) min["cpu"] = multiply_quantity(t.cpu, t.nodes);
  if (!t.memory.empty()) min["memory"] = multiply_quantity(t.memory, t.nodes);
  if (t.gpus > 0) min[gpu_resource(t.mig)] = std::to_string(t.gpus * t.nodes);
  if (min.empty()) return nullptr;
  return min;
}

ordered_json render_podgroup(const RenderContext& ctx, const std::string& run,
                             const ordered_json& labels) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  ordered_json pg = ctx.load("podgroup.yaml");
  set_metadata(pg, p, run, labels);
  auto& spec = pg["spec"];
  spec["minMember"] = t.nodes;
  if (auto min = gang_min_resources(t); !min.is_null()) spec["minResources"] = min;
  if (!p.scheduling.queue.empty()) spec["queue"] = p.scheduling.queue;
  if (!p.scheduling.priority.empty()) spec["priorityClassName"] = p.scheduling.priority;
  return pg;
}

ordered_json train_pod_template(const RenderContext& ctx, const std::string& run,
                                const ordered_json& labels, const project::SweepPoint& point,
                                const TrainPodWiring& w) {
  const auto& p = ctx.project;
  const auto& t = *p.train;
  const bool volcano = p.scheduling.gang == "volcano";

  // The training pod's skeleton is the Job template's pod: one skeleton for every target.
  ordered_json job = ctx.load("job.yaml");
  ordered_json tmpl = job["spec"]["template"];
  if (!tmpl.is_object()) tmpl = ordered_json::object();
  auto& tmeta = tmpl["metadata"];
  if (!tmeta.is_object()) tmeta = ordered_json::object();
  if (!tmeta["labels"].is_object()) tmeta["labels"] = ordered_json::object();
  for (auto it = labels.begin(); it != labels.end(); ++it) tmeta["labels"][it.key()] = it.value();
  if (volcano && w.volcano_annotation) tmeta["annotations"][kAnnotationVolcanoGroup] = run;

  auto& pod = tmpl["spec"];
  if (!pod.is_object()) pod = ordered_json::object();
  if (!w.subdomain.empty()) pod["subdomain"] = w.subdomain;
  pod["restartPolicy"] = "Never";  // the Job's podFailurePolicy requires it
  pod["terminationGracePeriodSeconds"] = t.grace_period_s;
  if (volcano && w.volcano_scheduler) pod["schedulerName"] = "volcano";
  set_pod_common(pod, p, w.gpus && t.gpus > 0, t.gpu_type);
  if (w.gpus) set_cuda_affinity(pod, tmeta, t.cuda, t.gpus > 0);
  auto [volumes, mounts] = volume_lists(t.volumes, t.shm);
  if (!volumes.empty()) pod["volumes"] = std::move(volumes);

  // The skeleton's container is "train"; a target whose operator looks for its own
  // container name ("pytorch", "tensorflow") gets it renamed.
  if (w.container != "train" && pod["containers"].is_array()) {
    for (auto& c : pod["containers"]) {
      if (c.is_object() && c.value("name", "") == "train") c["name"] = w.container;
    }
    tmeta["annotations"][kAnnotationDefaultContainer] = w.container;
  }
  auto& c = container_named(pod, w.container);
  c["image"] = ctx.image;
  if (w.launched) {
    c["command"] = ordered_json::array({"/opt/ktrain/bin/ktrain-launch", "--"});
    c["args"] = project::substitute_params(t.command, point.params);
  } else if (w.run_command) {
    c["command"] = project::substitute_params(t.command, point.params);
    c.erase("args");
  } else {
    c.erase("command");
    c.erase("args");
  }
  c["env"] = train_env(p, run, point, w);
  set_env_from(c, t.env_from);
  c["resources"] = w.gpus ? resources(t.cpu, t.memory, t.gpus, t.mig) : ordered_json(nullptr);
  if (!mounts.empty()) c["volumeMounts"] = std::move(mounts);
  set_container_security(c, p);
  c["terminationMessagePolicy"] = "FallbackToLogsOnError";
  if (needs_home(p)) add_home_volume(pod, w.container);  // last: `c` moves
  if (w.launched && ctx.launcher.inject) add_launcher_injection(pod, ctx, w.container);
  return tmpl;
}

void set_job_policies(const RenderContext& ctx, ordered_json& job_spec) {
  if (has_feature(ctx.kube_version, KubeFeature::kPodReplacementPolicy)) {
    job_spec["podReplacementPolicy"] = "Failed";
  }
  add_retry_rules(ctx.project.train->retry, job_spec);
}

void add_retry_rules(const std::vector<project::RetryRule>& retry, ordered_json& job_spec) {
  if (retry.empty()) return;
  ordered_json& policy = job_spec["podFailurePolicy"];
  if (!policy.is_object()) policy = ordered_json::object();
  ordered_json own = policy.contains("rules") && policy["rules"].is_array() ? policy["rules"]
                                                                            : ordered_json::array();
  // "Any other exit code" leaves out every code a rule names, the skeleton's own
  // included (a peer's stop stays free, a configuration error stays fatal), and 0.
  std::set<int> named = {0};
  for (const auto& r : retry) named.insert(r.exit_codes.begin(), r.exit_codes.end());
  for (const auto& r : own) {
    if (!r.contains("onExitCodes")) continue;
    const auto& e = r["onExitCodes"];
    if (e.value("operator", "") != "In" || !e.contains("values")) continue;
    for (const auto& code : e["values"]) {
      if (code.is_number_integer()) named.insert(code.get<int>());
    }
  }
  static const std::map<std::string, std::string> kActions = {
      {"fail", "FailJob"}, {"retry", "Count"}, {"retry-free", "Ignore"}};
  ordered_json rules = ordered_json::array();
  for (const auto& r : retry) {
    ordered_json rule = {{"action", kActions.at(r.action)}};
    switch (r.match) {
      case project::RetryRule::Match::kExitCodes:
        rule["onExitCodes"] = {
            {"containerName", "train"}, {"operator", "In"}, {"values", r.exit_codes}};
        break;
      case project::RetryRule::Match::kOtherExitCodes:
        rule["onExitCodes"] = {{"containerName", "train"},
                               {"operator", "NotIn"},
                               {"values", std::vector<int>(named.begin(), named.end())}};
        break;
      case project::RetryRule::Match::kDisruption:
        rule["onPodConditions"] =
            ordered_json::array({{{"type", "DisruptionTarget"}, {"status", "True"}}});
        break;
    }
    rules.push_back(std::move(rule));
  }
  for (auto& r : own) rules.push_back(std::move(r));
  policy["rules"] = std::move(rules);
}

std::string job_managed_by(const RenderContext& ctx) {
  const std::string& m = ctx.project.scheduling.managed_by;
  if (m.empty()) return m;
  if (!has_feature(ctx.kube_version, KubeFeature::kJobManagedBy)) {
    throw UsageError("scheduling.managedBy: Kubernetes " + ctx.kube_version.str() +
                     " does not serve the Job field spec.managedBy (it is on from " +
                     feature_since(KubeFeature::kJobManagedBy).str() +
                     "): the API server would drop it and run the Job itself");
  }
  return m;
}

ordered_json common_labels(const project::Project& project, const std::string& run,
                           const std::string& sweep) {
  ordered_json labels = ordered_json::object();
  labels[kLabelName] = project.name;
  labels[kLabelManagedBy] = "ktrain";
  labels[kLabelRun] = run;
  if (!sweep.empty()) labels[kLabelSweep] = sweep;
  for (const auto& [k, v] : project.labels) {
    if (!labels.contains(k)) labels[k] = v;  // ktrain's own labels cannot be overridden
  }
  return labels;
}

void set_metadata(ordered_json& object, const project::Project& project, const std::string& name,
                  const ordered_json& labels) {
  auto& meta = object["metadata"];
  if (!meta.is_object()) meta = ordered_json::object();
  meta["name"] = name;
  if (!project.namespace_.empty()) meta["namespace"] = project.namespace_;
  if (!meta["labels"].is_object()) meta["labels"] = ordered_json::object();
  for (auto it = labels.begin(); it != labels.end(); ++it) meta["labels"][it.key()] = it.value();
}

ordered_json serve_pod_template(const RenderContext& ctx, const ordered_json& labels,
                                const ordered_json& selector, const ServePodWiring& w) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  // The serving pod's skeleton is the Deployment template's pod, for every target.
  ordered_json dep = ctx.load("deployment.yaml");
  ordered_json tmpl = dep["spec"]["template"];
  if (!tmpl.is_object()) tmpl = ordered_json::object();
  auto& tmeta = tmpl["metadata"];
  if (!tmeta.is_object()) tmeta = ordered_json::object();
  if (!tmeta["labels"].is_object()) tmeta["labels"] = ordered_json::object();
  for (auto it = labels.begin(); it != labels.end(); ++it) tmeta["labels"][it.key()] = it.value();
  // Replicas apart: on other nodes where there are (a soft rule, so that a small
  // cluster still schedules them all).
  const int most = sv.autoscale ? sv.autoscale->max : sv.replicas.value_or(1);
  auto& pod = tmpl["spec"];
  if (!pod.is_object()) pod = ordered_json::object();
  set_pod_common(pod, p, sv.gpus > 0, sv.gpu_type);
  set_cuda_affinity(pod, tmeta, sv.cuda, sv.gpus > 0);
  if (sv.spread && most > 1 && w.spread) {
    ordered_json spread = {{"maxSkew", 1},
                           {"topologyKey", "kubernetes.io/hostname"},
                           {"whenUnsatisfiable", "ScheduleAnyway"},
                           {"labelSelector", {{"matchLabels", selector}}}};
    if (w.pod_template_hash) {
      spread["matchLabelKeys"] = ordered_json::array({"pod-template-hash"});
    }
    pod["topologySpreadConstraints"] = ordered_json::array({spread});
  }
  auto [volumes, mounts] = volume_lists(sv.volumes, sv.shm);
  if (!volumes.empty()) pod["volumes"] = std::move(volumes);
  if (w.container != "serve" && pod["containers"].is_array()) {
    for (auto& c : pod["containers"]) {
      if (c.is_object() && c.value("name", "") == "serve") c["name"] = w.container;
    }
  }
  auto& c = container_named(pod, w.container);
  c["image"] = ctx.image;
  if (!sv.command.empty()) c["command"] = sv.command;
  if (w.ports) {
    c["ports"] = ordered_json::array(
        {{{"name", w.port_name}, {"containerPort", sv.port}, {"protocol", "TCP"}}});
  } else {
    c.erase("ports");
  }
  ordered_json env = ordered_json::array();
  if (needs_home(p)) env.push_back(env_value("HOME", kHome));
  if (auto dir = project::checkpoint_dir(sv.volumes); !dir.empty()) {
    env.push_back(env_value("KTRAIN_CHECKPOINT_DIR", dir));
  }
  append_user_env(env, sv.env);
  if (!env.empty()) c["env"] = env;
  set_env_from(c, sv.env_from);
  c["resources"] = resources(sv.cpu, sv.memory, sv.gpus, "");
  if (!mounts.empty()) c["volumeMounts"] = std::move(mounts);
  if (w.probes) {
    if (sv.readiness) c["readinessProbe"] = probe(*sv.readiness, sv.port);
    if (sv.liveness) c["livenessProbe"] = probe(*sv.liveness, sv.port);
    // A model may load for many minutes: a startup probe holds the liveness probe off
    // until the server answers (by default up to 30 minutes, checked every 10 s).
    if (sv.startup) {
      c["startupProbe"] = probe(*sv.startup, sv.port);
    } else if (sv.readiness || sv.liveness) {
      project::Probe st = sv.readiness ? *sv.readiness : *sv.liveness;
      st.initial_delay_s = 0;
      st.period_s = 10;
      st.failure_threshold = 180;
      c["startupProbe"] = probe(st, sv.port);
    }
  }
  set_container_security(c, p);
  c["terminationMessagePolicy"] = "FallbackToLogsOnError";
  if (needs_home(p)) add_home_volume(pod, w.container);  // last: `c` moves
  return tmpl;
}

ordered_json render_serve_service(const RenderContext& ctx, const ordered_json& labels,
                                  const ordered_json& selector) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  ordered_json svc = ctx.load("service.yaml");
  set_metadata(svc, p, p.name, labels);
  svc["spec"]["type"] = "ClusterIP";
  svc["spec"]["selector"] = selector;
  svc["spec"]["ports"] = ordered_json::array(
      {{{"name", "http"}, {"port", sv.port}, {"targetPort", sv.port}, {"protocol", "TCP"}}});
  return svc;
}

ordered_json render_pdb(const RenderContext& ctx, const ordered_json& labels,
                        const ordered_json& selector) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  // With two replicas or more, a drain or an upgrade takes one at a time.
  const int least = sv.autoscale ? sv.autoscale->min : sv.replicas.value_or(1);
  if (!sv.disruption || least < 2) return nullptr;
  ordered_json pdb = ctx.load("pdb.yaml");
  set_metadata(pdb, p, p.name, labels);
  pdb["spec"]["selector"] = {{"matchLabels", selector}};
  return pdb;
}

ordered_json render_hpa(const RenderContext& ctx, const ordered_json& labels,
                        const std::string& api_version, const std::string& kind) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  const auto& a = *sv.autoscale;
  ordered_json hpa = ctx.load("hpa.yaml");
  set_metadata(hpa, p, p.name, labels);
  auto& hs = hpa["spec"];
  hs["scaleTargetRef"] = {{"apiVersion", api_version}, {"kind", kind}, {"name", p.name}};
  hs["minReplicas"] = a.min;
  hs["maxReplicas"] = a.max;
  ordered_json metrics = ordered_json::array();
  if (a.cpu) {
    metrics.push_back({{"type", "Resource"},
                       {"resource",
                        {{"name", "cpu"},
                         {"target", {{"type", "Utilization"}, {"averageUtilization", *a.cpu}}}}}});
    if (sv.cpu.empty()) {
      ctx.warnings->push_back(
          "serve.autoscale.cpu is set but serve.cpu is not: the autoscaler computes CPU "
          "utilisation against the pods' CPU request, so set serve.cpu (e.g. cpu: \"2\")");
    }
  }
  if (a.metric) {
    metrics.push_back(
        {{"type", "Pods"},
         {"pods",
          {{"metric", {{"name", a.metric->name}}},
           {"target", {{"type", "AverageValue"}, {"averageValue", a.metric->target}}}}}});
  }
  hs["metrics"] = metrics;
  return hpa;
}

void prune_nulls(ordered_json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (it.value().is_null()) {
        it = value.erase(it);
      } else {
        prune_nulls(it.value());
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (auto& item : value) prune_nulls(item);
  }
}

}  // namespace ktrain::render::detail
