#pragma once
// The parts of a render, one function per object kind. Internal to render/: the
// public entry point is render_project (render.h).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/project.h"
#include "project/sweep.h"
#include "render/render.h"

namespace ktrain::render::detail {

/// Returns a fresh copy of a template's skeleton (parsed from YAML) by file name.
using TemplateLoader = std::function<nlohmann::ordered_json(const std::string& file)>;

/// What one render works with.
struct RenderContext {
  const project::Project& project;
  TemplateLoader load;
  std::string image;                               ///< the image every container runs
  std::vector<std::string>* warnings;              ///< where problems that are not fatal go
  LauncherPlan launcher;                           ///< how training pods get ktrain-launch
  const std::set<std::string>* started = nullptr;  ///< RenderOptions::started
  KubeVersion kube_version = kNewestTested;        ///< RenderOptions::kube_version
};

/// What a training Job's spec (the job target's, a JobSet's replicated Job's) gets of
/// the release rendered for: podReplacementPolicy Failed where it is served.
void set_job_policies(const RenderContext& ctx, nlohmann::ordered_json& job_spec);

/// Puts the rules of train.retry, in order, before the Job skeleton's own in
/// `job_spec`'s podFailurePolicy (a rule on any other exit code leaves out those the
/// skeleton's rules name). No rules: `job_spec` as it is.
void add_retry_rules(const std::vector<project::RetryRule>& retry,
                     nlohmann::ordered_json& job_spec);

/// scheduling.managedBy for a Job's spec.managedBy; "" when not set. Throws UsageError
/// when the release rendered for does not serve the field (the server would drop it and
/// run the Job itself).
std::string job_managed_by(const RenderContext& ctx);

/// The labels of every object (and pod) of run `run`: ktrain's, then the project's.
/// `sweep` is the sweep label's value, "" when not a sweep.
nlohmann::ordered_json common_labels(const project::Project& project, const std::string& run,
                                     const std::string& sweep);

/// Sets metadata.name, metadata.namespace (when the project gives one) and adds `labels`.
void set_metadata(nlohmann::ordered_json& object, const project::Project& project,
                  const std::string& name, const nlohmann::ordered_json& labels);

/// How a target wires the training pod.
struct TrainPodWiring {
  /// The training container's name: "train", or the one its operator looks for.
  std::string container = "train";
  /// ktrain-launch is the entrypoint (false: MPIJob, where mpirun starts the workers).
  bool launched = true;
  /// Without the launcher: run train.command as the container's command (the MPIJob's
  /// Launcher), or leave the command to the operator (its Workers).
  bool run_command = false;
  /// The pod asks for train.gpus, cpu and memory (false: an MPIJob's Launcher).
  bool gpus = true;
  std::string master_addr;  ///< KTRAIN_MASTER_ADDR: node 0's address
  std::string subdomain;    ///< the pod's subdomain; "" = none (the operator's)
  /// The entries that give ktrain-launch its node rank (after KTRAIN_NNODES).
  nlohmann::ordered_json rank_env = nlohmann::ordered_json::array();
  /// scheduling.gang volcano: the pod names its PodGroup / asks for the volcano scheduler.
  bool volcano_annotation = true;
  bool volcano_scheduler = true;
  /// The pods are a Job's (its controller labels them with its uid): the rendezvous
  /// Secret is optional, and without it the launcher keys the rendezvous on the Job's
  /// uid (KTRAIN_RDZV_JOB_UID), so that `render | kubectl apply` runs with no secret in
  /// the manifests. Elsewhere the pods wait for the Secret that submit creates.
  bool job_uid_rendezvous = false;
};

/// The pod template ({metadata, spec}) of a training run's pods, from job.yaml's pod
/// skeleton: image, ktrain-launch, environment, resources, volumes, scheduling, security.
nlohmann::ordered_json train_pod_template(const RenderContext& ctx, const std::string& run,
                                          const nlohmann::ordered_json& labels,
                                          const project::SweepPoint& point,
                                          const TrainPodWiring& wiring);

/// How a target wires the serving pod.
struct ServePodWiring {
  std::string container = "serve";
  bool ports = true;  ///< the container declares serve.port
  std::string port_name = "http";
  bool probes = true;             ///< readiness, liveness and startup probes
  bool spread = true;             ///< topologySpreadConstraints (serve.spread)
  bool pod_template_hash = true;  ///< spread counts one revision (a Deployment's pods)
};

/// The pod template of the service's pods, from deployment.yaml's pod skeleton.
nlohmann::ordered_json serve_pod_template(const RenderContext& ctx,
                                          const nlohmann::ordered_json& labels,
                                          const nlohmann::ordered_json& selector,
                                          const ServePodWiring& wiring);

/// The service's ClusterIP Service (serve.port) selecting `selector`.
nlohmann::ordered_json render_serve_service(const RenderContext& ctx,
                                            const nlohmann::ordered_json& labels,
                                            const nlohmann::ordered_json& selector);

/// The service's PodDisruptionBudget (maxUnavailable 1) for `selector` when it has 2
/// replicas or more and serve.disruption; null otherwise.
nlohmann::ordered_json render_pdb(const RenderContext& ctx, const nlohmann::ordered_json& labels,
                                  const nlohmann::ordered_json& selector);

/// The HorizontalPodAutoscaler of serve.autoscale, scaling the object `kind`.
nlohmann::ordered_json render_hpa(const RenderContext& ctx, const nlohmann::ordered_json& labels,
                                  const std::string& api_version, const std::string& kind);

/// The Volcano PodGroup of a run (scheduling.gang: volcano).
nlohmann::ordered_json render_podgroup(const RenderContext& ctx, const std::string& run,
                                       const nlohmann::ordered_json& labels);

/// Whether the run waits for a place (train.sweep.parallel): created suspended.
bool is_queued(const RenderContext& ctx, const std::string& run, const project::SweepPoint& point);

/// Names a run's workload (Job, JobSet, PyTorchJob, ...) `run` with `labels`, Kueue's
/// queue label unless it waits (`queued`: then ktrain's queued label, and the queue in
/// an annotation until it is released), and a sweep's parameters as an annotation.
void set_run_metadata(const RenderContext& ctx, nlohmann::ordered_json& obj, const std::string& run,
                      const nlohmann::ordered_json& labels, const project::SweepPoint& point,
                      bool queued);

/// The resources of a whole run (cpu, memory, GPUs times the nodes) that gang
/// scheduling waits for; null when the project asks for none.
nlohmann::ordered_json gang_min_resources(const project::Train& t);

/// A sweep run's combination, as the JSON text of kAnnotationParams.
nlohmann::ordered_json params_annotation(const project::SweepPoint& point);

/// {name, value} and {name, valueFrom: {fieldRef: {fieldPath}}} env entries.
nlohmann::ordered_json env_literal(const std::string& name, const std::string& value);
nlohmann::ordered_json env_from_field(const std::string& name, const std::string& path);

/// nvidia.com/gpu, or nvidia.com/mig-<profile>.
std::string gpu_resource_name(const std::string& mig);

/// requests = limits of cpu, memory and GPUs; null when nothing is set.
nlohmann::ordered_json container_resources(const std::string& cpu, const std::string& memory,
                                           int gpus, const std::string& mig);

/// Removes every key whose value is null, at any depth (unset placeholders of the skeletons).
void prune_nulls(nlohmann::ordered_json& value);

}  // namespace ktrain::render::detail
