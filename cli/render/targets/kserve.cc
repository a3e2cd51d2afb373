// serve.target: kserve: a KServe InferenceService (serving.kserve.io/v1beta1). Its
// predictor runs the project's container (kserve-container, serve.port), or with
// serve.runtime a ServingRuntime of KServe's that loads serve.model.uri: triton
// (kserve-tritonserver) or vllm (kserve-huggingfaceserver with the vLLM backend).
// Replicas, autoscaling and the rollout are the predictor's own fields (minReplicas,
// maxReplicas, scaleMetric cpu, scaleTarget, deploymentStrategy); KServe makes the
// Deployment or Knative Service, the Service and the autoscaler. With 2+ replicas a
// PodDisruptionBudget keeps drains to one predictor pod at a time.

#include <set>
#include <string>
#include <vector>

#include "render/targets/targets.h"

namespace ktrain::render::targets {

namespace {

using nlohmann::ordered_json;

constexpr const char* kContainer = "kserve-container";

std::vector<ordered_json> render_kserve(const detail::RenderContext& ctx) {
  const auto& p = ctx.project;
  const auto& sv = *p.serve;
  const std::string& name = p.name;
  const ordered_json labels = detail::common_labels(p, name, "");
  const ordered_json selector = {{kLabelRun, name}};

  ordered_json isvc = ctx.load("inferenceservice.yaml");
  detail::set_metadata(isvc, p, name, labels);
  detail::ServePodWiring w;
  w.container = kContainer;
  w.port_name = "http1";  // Knative's name for an HTTP/1 port
  w.pod_template_hash = false;
  ordered_json tmpl = detail::serve_pod_template(ctx, labels, selector, w);
  auto& pod = tmpl["spec"];

  ordered_json predictor = ordered_json::object();
  if (sv.autoscale) {
    predictor["minReplicas"] = sv.autoscale->min;
    predictor["maxReplicas"] = sv.autoscale->max;
    if (sv.autoscale->cpu) {
      predictor["scaleMetric"] = "cpu";
      predictor["scaleTarget"] = *sv.autoscale->cpu;
      if (sv.cpu.empty()) {
        ctx.warnings->push_back(
            "serve.autoscale.cpu is set but serve.cpu is not: KServe's autoscaler computes CPU "
            "utilisation against the pods' CPU request, so set serve.cpu (e.g. cpu: \"2\")");
      }
    }
  } else {
    predictor["minReplicas"] = sv.replicas.value_or(1);
    predictor["maxReplicas"] = sv.replicas.value_or(1);
  }
  // The rolling update of the Deployment that KServe makes (RawDeployment mode).
  predictor["deploymentStrategy"] = {
      {"type", "RollingUpdate"},
      {"rollingUpdate",
       {{"maxSurge", sv.rollout.max_surge}, {"maxUnavailable", sv.rollout.max_unavailable}}}};
  predictor["labels"] = tmpl["metadata"]["labels"];
  if (tmpl["metadata"].contains("annotations") && tmpl["metadata"]["annotations"].is_object()) {
    predictor["annotations"] = tmpl["metadata"]["annotations"];
  }
  // The pod's own fields sit in the predictor beside KServe's.
  static const std::set<std::string> kPodFields = {"terminationGracePeriodSeconds",
                                                   "priorityClassName",
                                                   "runtimeClassName",
                                                   "nodeSelector",
                                                   "tolerations",
                                                   "imagePullSecrets",
                                                   "securityContext",
                                                   "affinity",
                                                   "topologySpreadConstraints",
                                                   "volumes"};
  for (auto it = pod.begin(); it != pod.end(); ++it) {
    if (kPodFields.count(it.key()) && !it.value().is_null()) predictor[it.key()] = it.value();
  }
  ordered_json container;
  for (auto& c : pod["containers"]) {
    if (c.value("name", "") == kContainer) container = c;
  }
  if (sv.runtime.empty()) {
    predictor["containers"] = ordered_json::array({container});
  } else {
    // A runtime's server: the model, its format and the container's resources, env,
    // mounts and security; the runtime gives the image, command and port.
    ordered_json model = ordered_json::object();
    const bool triton = sv.runtime == "triton";
    const std::string format =
        !sv.model_format.empty() ? sv.model_format : (triton ? "triton" : "huggingface");
    model["modelFormat"] = {{"name", format}};
    model["runtime"] = triton ? "kserve-tritonserver" : "kserve-huggingfaceserver";
    model["storageUri"] = sv.model_uri;
    if (!triton) model["args"] = ordered_json::array({"--backend=vllm"});
    for (const char* key : {"env", "envFrom", "resources", "volumeMounts", "securityContext"}) {
      if (container.contains(key) && !container[key].is_null()) model[key] = container[key];
    }
    predictor["model"] = std::move(model);
  }
  isvc["spec"]["predictor"] = std::move(predictor);
  std::vector<ordered_json> out;
  out.push_back(std::move(isvc));
  if (auto pdb = detail::render_pdb(ctx, labels, selector); !pdb.is_null()) {
    out.push_back(std::move(pdb));
  }
  return out;
}

}  // namespace

extern const ServeTarget kKServe = {
    "kserve",
    {"serving.kserve.io/v1beta1", "InferenceService", "inferenceservices",
     "inferenceservices.serving.kserve.io",
     "install KServe: https://kserve.github.io/website/latest/admin/serverless/serverless/ "
     "(or the RawDeployment install, without Knative)"},
    kContainer,
    render_kserve};

}  // namespace ktrain::render::targets
