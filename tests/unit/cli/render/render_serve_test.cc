#include <doctest/doctest.h>

#include "render/render.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

TEST_CASE("render serve: a Deployment and a ClusterIP Service named after the project") {
  auto r = render_fixed(serve_project());
  REQUIRE(r.objects.size() == 2);
  const auto& dep = r.objects[0];
  const auto& svc = r.objects[1];
  CHECK(dep["kind"] == "Deployment");
  CHECK(dep["apiVersion"] == "apps/v1");
  CHECK(dep["metadata"]["name"] == "api");
  CHECK(dep["spec"]["replicas"] == 1);
  CHECK(dep["spec"]["selector"]["matchLabels"] == ordered_json({{"ktrain.dev/run", "api"}}));
  CHECK(dep["spec"]["template"]["metadata"]["labels"]["ktrain.dev/run"] == "api");
  CHECK(dep["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ktrain");
  CHECK(svc["kind"] == "Service");
  CHECK(svc["metadata"]["name"] == "api");
  CHECK(svc["spec"]["type"] == "ClusterIP");
  CHECK(svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]);
  CHECK(svc["spec"]["ports"][0]["port"] == 8080);
  CHECK(svc["spec"]["ports"][0]["targetPort"] == 8080);
}

TEST_CASE(
    "render serve: the container runs the serve command on its port, with the security rules") {
  auto p = serve_project();
  p.serve->env = {{"MODEL", "resnet"}};
  auto r = render_fixed(p);
  const auto& c = container_of(object_of(r, "Deployment"));
  CHECK(c["name"] == "serve");
  CHECK(c["image"] == "registry.example.com/ml/api:v2");
  CHECK(c["command"] == ordered_json::array({"python", "serve.py"}));
  CHECK(c["ports"] ==
        ordered_json::array({{{"name", "http"}, {"containerPort", 8080}, {"protocol", "TCP"}}}));
  CHECK(c["env"] == ordered_json::array({{{"name", "HOME"}, {"value", "/home/ktrain"}},
                                         {{"name", "MODEL"}, {"value", "resnet"}}}));
  CHECK(c["securityContext"]["allowPrivilegeEscalation"] == false);
  CHECK(c["securityContext"]["capabilities"]["drop"] == ordered_json::array({"ALL"}));
}

TEST_CASE("render serve: without a command the image's entrypoint runs") {
  auto p = serve_project();
  p.serve->command.clear();
  auto r = render_fixed(p);
  CHECK_FALSE(container_of(object_of(r, "Deployment")).contains("command"));
}

TEST_CASE("render serve: readiness and liveness are HTTP probes on the serve port by default") {
  auto p = serve_project();
  p.serve->readiness = project::Probe{"/healthz", 0, 5, 10, 3};
  p.serve->liveness = project::Probe{"/livez", 9090, 30, 20, 6};
  auto r = render_fixed(p);
  const auto& c = container_of(object_of(r, "Deployment"));
  CHECK(c["readinessProbe"] == ordered_json({{"httpGet", {{"path", "/healthz"}, {"port", 8080}}},
                                             {"initialDelaySeconds", 5},
                                             {"periodSeconds", 10},
                                             {"failureThreshold", 3}}));
  CHECK(c["livenessProbe"]["httpGet"]["port"] == 9090);
  CHECK(c["livenessProbe"]["httpGet"]["path"] == "/livez");
  CHECK(c["livenessProbe"]["failureThreshold"] == 6);
}

TEST_CASE("render serve: no probes are rendered when none are given") {
  auto r = render_fixed(serve_project());
  const auto& c = container_of(object_of(r, "Deployment"));
  CHECK_FALSE(c.contains("readinessProbe"));
  CHECK_FALSE(c.contains("livenessProbe"));
}

TEST_CASE("render serve: the rollout is a RollingUpdate with maxSurge and maxUnavailable") {
  auto p = serve_project();
  p.serve->rollout.max_surge = "25%";
  p.serve->rollout.max_unavailable = 1;
  auto r = render_fixed(p);
  const auto& st = object_of(r, "Deployment")["spec"]["strategy"];
  CHECK(st["type"] == "RollingUpdate");
  CHECK(st["rollingUpdate"]["maxSurge"] == "25%");
  CHECK(st["rollingUpdate"]["maxUnavailable"] == 1);
}

TEST_CASE("render serve: GPUs are limits equal to requests, with the default toleration") {
  auto p = serve_project();
  p.serve->gpus = 1;
  p.serve->cpu = "4";
  auto r = render_fixed(p);
  const auto& dep = object_of(r, "Deployment");
  const auto& res = container_of(dep)["resources"];
  CHECK(res["limits"]["nvidia.com/gpu"] == "1");
  CHECK(res["limits"] == res["requests"]);
  CHECK(dep["spec"]["template"]["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu");
}

TEST_CASE("render serve: fixed replicas") {
  auto p = serve_project();
  p.serve->replicas = 3;
  auto r = render_fixed(p);
  CHECK(object_of(r, "Deployment")["spec"]["replicas"] == 3);
  CHECK(count_of(r, "HorizontalPodAutoscaler") == 0);
}

TEST_CASE(
    "render serve: autoscale adds an HPA on CPU and a Pods metric; the Deployment starts with "
    "its minimum") {
  auto p = serve_project();
  p.serve->cpu = "2";
  p.serve->replicas = 2;
  p.serve->autoscale =
      project::Autoscale{3, 20, 70, project::PodsMetric{"DCGM_FI_DEV_GPU_UTIL", "70"}};
  auto r = render_fixed(p);
  REQUIRE(r.objects.size() == 4);  // and the PodDisruptionBudget of 3+ replicas
  CHECK(object_of(r, "Deployment")["spec"]["replicas"] == 3);
  const auto& hpa = object_of(r, "HorizontalPodAutoscaler");
  CHECK(hpa["apiVersion"] == "autoscaling/v2");
  CHECK(hpa["metadata"]["name"] == "api");
  CHECK(hpa["spec"]["scaleTargetRef"] ==
        ordered_json({{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "api"}}));
  CHECK(hpa["spec"]["minReplicas"] == 3);
  CHECK(hpa["spec"]["maxReplicas"] == 20);
  const auto& m = hpa["spec"]["metrics"];
  REQUIRE(m.size() == 2);
  CHECK(m[0] ==
        ordered_json({{"type", "Resource"},
                      {"resource",
                       {{"name", "cpu"},
                        {"target", {{"type", "Utilization"}, {"averageUtilization", 70}}}}}}));
  CHECK(m[1] == ordered_json({{"type", "Pods"},
                              {"pods",
                               {{"metric", {{"name", "DCGM_FI_DEV_GPU_UTIL"}}},
                                {"target", {{"type", "AverageValue"}, {"averageValue", "70"}}}}}}));
  CHECK(r.warnings.empty());
}

TEST_CASE("render serve: a CPU target without a CPU request is a warning") {
  auto p = serve_project();
  p.serve->autoscale = project::Autoscale{1, 4, 80, std::nullopt};
  auto r = render_fixed(p);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("serve.cpu") != std::string::npos);
}

TEST_CASE("render: a project with train and serve renders the run first, then the service") {
  auto p = train_project();
  p.serve = serve_project().serve;
  auto r = render_fixed(p);
  REQUIRE(r.objects.size() == 4);
  CHECK(r.objects[1]["kind"] == "Job");
  CHECK(r.objects[2]["kind"] == "Deployment");
  CHECK(r.objects[2]["metadata"]["name"] == "demo");
}

TEST_CASE("render serve: volumes, shm, envFrom and gpuType, as for training") {
  auto p = serve_project();
  using K = project::Volume::Kind;
  p.serve->volumes = {{K::kClaim, "weights", "/models", true}, {K::kEmptyDir, "", "/cache", false}};
  p.serve->shm = "8Gi";
  p.serve->env_from = {{project::EnvFrom::Kind::kSecret, "hf-token"}};
  p.serve->gpus = 1;
  p.serve->gpu_type = "NVIDIA-L4";
  auto r = render_fixed(p);
  const auto& pod = object_of(r, "Deployment")["spec"]["template"]["spec"];
  const auto& c = pod["containers"][0];
  CHECK(pod["volumes"][0] ==
        ordered_json({{"name", "claim-0"},
                      {"persistentVolumeClaim", {{"claimName", "weights"}, {"readOnly", true}}}}));
  CHECK(pod["volumes"][1]["emptyDir"] == ordered_json::object());
  CHECK(
      pod["volumes"][2] ==
      ordered_json({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "8Gi"}}}}));
  CHECK(c["volumeMounts"][0] ==
        ordered_json({{"name", "claim-0"}, {"mountPath", "/models"}, {"readOnly", true}}));
  CHECK(c["volumeMounts"][2]["mountPath"] == "/dev/shm");
  CHECK(c["envFrom"] == ordered_json::array({{{"secretRef", {{"name", "hf-token"}}}}}));
  CHECK(pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-L4");
}

TEST_CASE("render serve: a startup probe holds liveness off while the model loads") {
  auto p = serve_project();
  auto none = render_fixed(p);
  CHECK_FALSE(container_of(object_of(none, "Deployment")).contains("startupProbe"));
  p.serve->readiness = project::Probe{"/ready", 0, 0, 5, 3};
  p.serve->liveness = project::Probe{"/live", 0, 0, 10, 3};
  auto r = render_fixed(p);
  const auto& st = container_of(object_of(r, "Deployment"))["startupProbe"];
  CHECK(st["httpGet"]["path"] == "/ready");
  CHECK(st["httpGet"]["port"] == 8080);
  CHECK(st["periodSeconds"] == 10);
  CHECK(st["failureThreshold"] == 180);  // 30 minutes
  p.serve->startup = project::Probe{"/started", 9000, 0, 5, 600};
  auto own = render_fixed(p);
  const auto& ost = container_of(object_of(own, "Deployment"))["startupProbe"];
  CHECK(ost["httpGet"] == ordered_json({{"path", "/started"}, {"port", 9000}}));
  CHECK(ost["failureThreshold"] == 600);
}

TEST_CASE("render serve: 2+ replicas spread across nodes with a PodDisruptionBudget") {
  auto p = serve_project();
  auto one = render_fixed(p);
  CHECK_FALSE(object_of(one, "Deployment")["spec"]["template"]["spec"].contains(
      "topologySpreadConstraints"));
  for (const auto& o : one.objects) CHECK(o["kind"] != "PodDisruptionBudget");

  p.serve->autoscale = project::Autoscale{};
  p.serve->autoscale->min = 2;
  p.serve->autoscale->max = 6;
  auto r = render_fixed(p);
  const auto& spread =
      object_of(r, "Deployment")["spec"]["template"]["spec"]["topologySpreadConstraints"];
  REQUIRE(spread.size() == 1);
  CHECK(spread[0]["topologyKey"] == "kubernetes.io/hostname");
  CHECK(spread[0]["whenUnsatisfiable"] == "ScheduleAnyway");
  CHECK(spread[0]["labelSelector"]["matchLabels"] == ordered_json({{"ktrain.dev/run", "api"}}));
  const auto& pdb = object_of(r, "PodDisruptionBudget");
  CHECK(pdb["apiVersion"] == "policy/v1");
  CHECK(pdb["metadata"]["name"] == "api");
  CHECK(pdb["spec"]["maxUnavailable"] == 1);
  CHECK(pdb["spec"]["selector"]["matchLabels"] == ordered_json({{"ktrain.dev/run", "api"}}));
  CHECK(r.objects.back()["kind"] == "PodDisruptionBudget");

  // Up to 6 but at least 1: spread, but no budget (it would block draining the only one).
  p.serve->autoscale->min = 1;
  auto low = render_fixed(p);
  for (const auto& o : low.objects) CHECK(o["kind"] != "PodDisruptionBudget");
  // Both can be turned off.
  p.serve->autoscale->min = 3;
  p.serve->spread = false;
  p.serve->disruption = false;
  auto off = render_fixed(p);
  CHECK_FALSE(object_of(off, "Deployment")["spec"]["template"]["spec"].contains(
      "topologySpreadConstraints"));
  for (const auto& o : off.objects) CHECK(o["kind"] != "PodDisruptionBudget");
}
