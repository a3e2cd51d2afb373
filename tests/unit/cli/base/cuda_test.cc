#include "base/cuda.h"

#include <doctest/doctest.h>

using namespace ktrain;

TEST_CASE("cuda: versions as projects, images and labels write them") {
  CHECK(parse_cuda_version("12.1") == CudaVersion{12, 1});
  CHECK(parse_cuda_version("12") == CudaVersion{12, 0});
  CHECK(parse_cuda_version("12.1.105") == CudaVersion{12, 1});
  CHECK(parse_cuda_version("11.8.0") == CudaVersion{11, 8});
  CHECK(parse_cuda_version("12.10") == CudaVersion{12, 10});
  for (const char* bad : {"", "0", "0.1", "12.", ".1", "12.x", "v12.1", "12.1.", "12.1.0.1a",
                          "1234.1", "12.1 ", "12.1-1", "-12"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cuda_version(bad));
  }
  CHECK(CudaVersion{12, 1}.str() == "12.1");
  CHECK(CudaVersion{12, 1}.encoded() == 12010);
}

TEST_CASE("cuda: a driver runs its own version and older ones") {
  CHECK(CudaVersion{13, 0}.runs({12, 1}));
  CHECK(CudaVersion{12, 1}.runs({12, 1}));
  CHECK(CudaVersion{12, 4}.runs({12, 1}));
  CHECK_FALSE(CudaVersion{12, 0}.runs({12, 1}));
  CHECK_FALSE(CudaVersion{11, 8}.runs({12, 1}));
  CHECK_FALSE(CudaVersion{11, 2}.runs({11, 4}));
}

TEST_CASE("cuda: what an image config says it needs, and where it says it") {
  using nlohmann::json;
  auto need = image_cuda(json{{"Env", {"PATH=/usr/bin", "CUDA_VERSION=12.1.0"}}});
  REQUIRE(need);
  CHECK(need->version == CudaVersion{12, 1});
  CHECK(need->source == "CUDA_VERSION=12.1.0");

  // The label that ktrain build records wins over the variables.
  need =
      image_cuda(json{{"Env", {"CUDA_VERSION=12.1.0"}}, {"Labels", {{"dev.ktrain.cuda", "12.4"}}}});
  REQUIRE(need);
  CHECK(need->version == CudaVersion{12, 4});
  CHECK(need->source == "label dev.ktrain.cuda");

  need = image_cuda(
      json{{"Env", {"NVIDIA_REQUIRE_CUDA=cuda>=11.8 brand=tesla,driver>=470,driver<471"}}});
  REQUIRE(need);
  CHECK(need->version == CudaVersion{11, 8});
  CHECK(need->source == "NVIDIA_REQUIRE_CUDA cuda>=11.8");

  CHECK_FALSE(image_cuda(json{{"Env", {"PATH=/usr/bin", "CUDA_VERSIONX=12.1"}}}));
  CHECK_FALSE(image_cuda(json{{"Env", {"CUDA_VERSION=latest"}}}));
  CHECK_FALSE(image_cuda(json{{"Env", "CUDA_VERSION=12.1"}}));  // not a list
  CHECK_FALSE(image_cuda(json::object()));
  CHECK_FALSE(image_cuda(json()));
}

TEST_CASE("cuda: a node's driver from GPU feature discovery's labels") {
  using nlohmann::json;
  CHECK(node_cuda(json{{"nvidia.com/cuda.runtime-version.major", "12"},
                       {"nvidia.com/cuda.runtime-version.minor", "4"},
                       {"nvidia.com/cuda.runtime.major", "11"},
                       {"nvidia.com/cuda.runtime.minor", "2"}}) == CudaVersion{12, 4});
  CHECK(node_cuda(json{{"nvidia.com/cuda.runtime.major", "11"},
                       {"nvidia.com/cuda.runtime.minor", "2"}}) == CudaVersion{11, 2});
  // The kernel driver's own version is not the CUDA version.
  CHECK_FALSE(node_cuda(json{{"nvidia.com/cuda.driver.major", "550"}}));
  CHECK_FALSE(node_cuda(json{{"nvidia.com/cuda.runtime-version.major", "x"}}));
  CHECK_FALSE(node_cuda(json::object()));
}

TEST_CASE("cuda: node terms keep pods off nodes whose driver is too old") {
  auto terms = cuda_node_terms({12, 1});
  REQUIRE(terms.size() == 5);
  // Evaluates the terms as the scheduler does: any term, all of its expressions.
  auto matches = [&](const nlohmann::json& labels) {
    for (const auto& t : terms) {
      bool all = true;
      for (const auto& e : t["matchExpressions"]) {
        const std::string key = e["key"];
        const std::string op = e["operator"];
        const bool has = labels.contains(key);
        if (op == "DoesNotExist") {
          all = all && !has;
        } else if (op == "In") {
          all = all && has && labels[key].get<std::string>() == e["values"][0].get<std::string>();
        } else if (op == "Gt") {
          all = all && has &&
                std::stoi(labels[key].get<std::string>()) >
                    std::stoi(e["values"][0].get<std::string>());
        } else {
          FAIL("unexpected operator " << op);
        }
      }
      if (all) return true;
    }
    return false;
  };
  auto gfd = [](const char* major, const char* minor) {
    return nlohmann::json{{"nvidia.com/cuda.runtime-version.major", major},
                          {"nvidia.com/cuda.runtime-version.minor", minor},
                          {"nvidia.com/cuda.runtime.major", major},
                          {"nvidia.com/cuda.runtime.minor", minor}};
  };
  CHECK(matches(gfd("13", "0")));
  CHECK(matches(gfd("12", "1")));
  CHECK(matches(gfd("12", "4")));
  CHECK_FALSE(matches(gfd("12", "0")));
  CHECK_FALSE(matches(gfd("11", "8")));
  CHECK_FALSE(matches(gfd("11", "2")));
  // GFD before v0.15: only the old labels.
  CHECK(matches({{"nvidia.com/cuda.runtime.major", "12"}, {"nvidia.com/cuda.runtime.minor", "2"}}));
  CHECK_FALSE(
      matches({{"nvidia.com/cuda.runtime.major", "11"}, {"nvidia.com/cuda.runtime.minor", "4"}}));
  // No GFD: allowed (the launcher checks the driver there).
  CHECK(matches({{"kubernetes.io/hostname", "n1"}}));

  // A need of X.0 has no minor to compare.
  auto whole = cuda_node_terms({12, 0});
  for (const auto& t : whole) {
    for (const auto& e : t["matchExpressions"])
      CHECK(e["key"] != "nvidia.com/cuda.runtime-version.minor");
  }
}
