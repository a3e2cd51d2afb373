#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/gpu_usage.h"
#include "kube/usage_fetch.h"

using namespace ktrain::kube;
using nlohmann::json;

namespace {

/// One node's exporter text: `n` GPUs, the first `allocated` of them on pod `pod`.
std::string exporter_text(int n, int allocated, const std::string& pod, int util = 90) {
  std::string out = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n";
  for (int i = 0; i < n; ++i) {
    std::string labels = "gpu=\"" + std::to_string(i) + "\",UUID=\"GPU-" + pod + std::to_string(i) +
                         "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"host\"";
    if (i < allocated) labels += ",pod=\"" + pod + "\",namespace=\"ml\",container=\"train\"";
    out += "DCGM_FI_DEV_GPU_UTIL{" + labels + "} " + std::to_string(util) + "\n";
    out += "DCGM_FI_DEV_FB_USED{" + labels + "} 1024\n";
    out += "DCGM_FI_DEV_FB_FREE{" + labels + "} 3072\n";
  }
  return out;
}

json pod(const std::string& name, const std::string& run, int rank, const std::string& node,
         int gpus = 8) {
  json labels = {{"ktrain.dev/run", run}};
  if (rank >= 0) labels["batch.kubernetes.io/job-completion-index"] = std::to_string(rank);
  return {{"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"creationTimestamp", "2027-01-15T07:00:01Z"},
            {"labels", labels}}},
          {"spec",
           {{"nodeName", node},
            {"containers",
             {{{"name", "train"},
               {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

json pod_metrics(const std::string& name, const std::string& cpu, const std::string& memory) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"containers", {{{"name", "train"}, {"usage", {{"cpu", cpu}, {"memory", memory}}}}}}};
}

std::vector<GpuUsage> gpus_of(const std::string& text, const std::string& node) {
  return gpus_from_dcgm(parse_prometheus_text(text, is_dcgm_metric).samples, node);
}

}  // namespace

TEST_CASE("gpu usage: an exporter's samples become one GPU each, in device order") {
  auto gpus = gpus_of(exporter_text(12, 12, "p"), "node-1");
  REQUIRE(gpus.size() == 12);
  CHECK(gpus[0].gpu == "0");
  CHECK(gpus[2].gpu == "2");
  CHECK(gpus[10].gpu == "10");  // 10 after 9, not after 1
  CHECK(gpus[0].node == "node-1");
  CHECK(gpus[0].model == "NVIDIA H100 80GB HBM3");
  CHECK(gpus[0].pod == "p");
  CHECK(gpus[0].util_percent == 90);
  CHECK(gpus[0].used_bytes == 1024.0 * 1024 * 1024);
  CHECK(gpus[0].total_bytes == 4096.0 * 1024 * 1024);
}

TEST_CASE("gpu usage: NaN, negative and missing figures are unknown, not zero") {
  auto gpus = gpus_of(
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"A\"} NaN\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"A\"} -1\n"
      "DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"A\"} 100\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"B\"} 250\n",
      "n");
  REQUIRE(gpus.size() == 2);
  CHECK(!gpus[0].util_percent);
  CHECK(!gpus[0].used_bytes);
  CHECK(!gpus[0].total_bytes);
  CHECK(gpus[1].util_percent == 100);  // clamped
  const auto t = totals(gpus);
  CHECK(t.count == 2);
  CHECK(t.util_percent == 100);  // the mean of the GPUs that report it
  CHECK(!t.used_bytes);
}

TEST_CASE("gpu usage: the old pod_name / pod_namespace labels map a GPU too") {
  auto gpus = gpus_of(
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"A\",pod_name=\"w-0\",pod_namespace=\"ml\"} 50\n", "n");
  REQUIRE(gpus.size() == 1);
  CHECK(gpus[0].pod == "w-0");
  CHECK(gpus[0].namespace_ == "ml");
}

TEST_CASE("gpu usage: 2 nodes x 8 GPUs join to ranks; CPU and memory from metrics.k8s.io") {
  auto gpus = gpus_of(exporter_text(8, 8, "r-0-abcde", 96), "node-1");
  for (auto& g : gpus_of(exporter_text(8, 8, "r-1-fghij", 80), "node-2")) gpus.push_back(g);
  // An older pod of rank 1 (replaced) and a pod of another run in the list.
  auto old = pod("r-1-old00", "r", 1, "node-3");
  old["metadata"]["creationTimestamp"] = "2027-01-15T06:00:00Z";
  const std::vector<json> pods = {pod("r-1-fghij", "r", 1, "node-2"), old,
                                  pod("r-0-abcde", "r", 0, "node-1")};
  const std::vector<json> metrics = {pod_metrics("r-0-abcde", "7250m", "48Gi"),
                                     pod_metrics("r-1-fghij", "6", "40Gi")};
  const auto ranks = join_pods(pods, metrics, gpus);
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].rank == 0);
  CHECK(ranks[0].pod == "r-0-abcde");
  CHECK(ranks[0].kind == "train");
  CHECK(ranks[0].gpus.size() == 8);
  CHECK(ranks[0].gpus_requested == 8);
  CHECK(totals(ranks[0].gpus).util_percent == 96);
  CHECK(ranks[0].cpu_cores == doctest::Approx(7.25));
  CHECK(ranks[0].memory_bytes == 48.0 * 1024 * 1024 * 1024);
  CHECK(ranks[1].pod == "r-1-fghij");  // the newest pod of rank 1
  CHECK(totals(ranks[1].gpus).util_percent == 80);

  json node_metrics = {{"metadata", {{"name", "node-2"}}},
                       {"usage", {{"cpu", "60"}, {"memory", "400Gi"}}}};
  const auto nodes = join_nodes(ranks, {node_metrics}, gpus, {"node-1", "node-2"});
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].node == "node-1");
  CHECK(nodes[0].gpus.size() == 8);
  CHECK(nodes[0].exporter);
  CHECK(!nodes[0].cpu_cores);
  CHECK(nodes[1].cpu_cores == 60);
}

TEST_CASE("gpu usage: a GPU of a pod of the same name in another namespace is not joined") {
  auto gpus = gpus_of(exporter_text(2, 2, "w"), "node-1");
  for (auto& g : gpus) g.namespace_ = "other";
  const auto ranks = join_pods({pod("w", "r", 0, "node-1", 2)}, {}, gpus);
  REQUIRE(ranks.size() == 1);
  CHECK(ranks[0].gpus.empty());
  CHECK(!ranks[0].cpu_cores);
}

TEST_CASE("gpu usage: a service's replicas are ranked by age") {
  auto a = pod("web-x", "web", -1, "node-1", 1);
  auto b = pod("web-y", "web", -1, "node-2", 1);
  b["metadata"]["creationTimestamp"] = "2027-01-15T06:00:00Z";
  const auto ranks = join_pods({a, b}, {}, {});
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].pod == "web-y");
  CHECK(ranks[0].kind == "serve");
  CHECK(ranks[1].rank == 1);
}

TEST_CASE("gpu usage: --dcgm NAMESPACE/[https:]SERVICE[:PORT]") {
  std::string problem;
  auto d = parse_dcgm_location("monitoring/dcgm:metrics", &problem);
  REQUIRE(d);
  CHECK(d->namespace_ == "monitoring");
  CHECK(d->service == "dcgm");
  CHECK(d->port == "metrics");
  d = parse_dcgm_location("gpu/https:exp", &problem);
  REQUIRE(d);
  CHECK(d->scheme == "https");
  CHECK(d->port == "9400");
  CHECK(d->to_string() == "gpu/https:exp:9400");
  CHECK(!parse_dcgm_location("no-slash", &problem));
  CHECK(!parse_dcgm_location("ns/Bad_Name:1", &problem));
  CHECK(problem.find("Bad_Name") != std::string::npos);
}
