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
  REQUIRE(r.objects.size() == 3);
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
