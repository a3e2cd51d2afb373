// The Kubernetes release render is for: parsing it, and the Job fields it gates.

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "render/kube_version.h"
#include "render/render.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

TEST_CASE("kube version: releases as users and API servers write them") {
  CHECK(parse_kube_version("1.36") == KubeVersion{1, 36});
  CHECK(parse_kube_version("v1.36") == KubeVersion{1, 36});
  CHECK(parse_kube_version("1.36.3") == KubeVersion{1, 36});
  CHECK(parse_kube_version("v1.32.13") == KubeVersion{1, 32});
  CHECK(parse_kube_version("v1.31.2-gke.1200") == KubeVersion{1, 31});
  CHECK(parse_kube_version("v1.30.4+k3s1") == KubeVersion{1, 30});
  for (const char* bad : {"", "1", "1.", ".36", "1.x", "one.36", "1.36.", "1.36.3.4", "1.36a"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_kube_version(bad).has_value());
  }
  CHECK(KubeVersion{1, 36}.str() == "1.36");
  CHECK(KubeVersion{1, 9} < KubeVersion{1, 10});
}

TEST_CASE("kube version: an API server's /version answer") {
  CHECK(kube_version_of(ordered_json{{"major", "1"}, {"minor", "36"}}) == KubeVersion{1, 36});
  // Some distributions mark the minor with '+'.
  CHECK(kube_version_of(ordered_json{{"major", "1"}, {"minor", "33+"}}) == KubeVersion{1, 33});
  // No usable major and minor: the gitVersion says.
  CHECK(kube_version_of(nlohmann::json{{"major", ""}, {"minor", ""}, {"gitVersion", "v1.34.1"}}) ==
        KubeVersion{1, 34});
  CHECK(kube_version_of(ordered_json{{"major", 1}, {"gitVersion", "v1.35.0"}}) ==
        KubeVersion{1, 35});
  CHECK_FALSE(kube_version_of(ordered_json{{"platform", "linux/amd64"}}).has_value());
  CHECK_FALSE(kube_version_of(ordered_json::array()).has_value());
}

TEST_CASE("kube version: the tested releases, and what is said of others") {
  CHECK(kOldestTested == KubeVersion{1, 32});
  CHECK(kNewestTested == KubeVersion{1, 36});
  CHECK(untested_release({1, 32}).empty());
  CHECK(untested_release({1, 36}).empty());
  CHECK(untested_release({1, 31}).find("older than 1.32") != std::string::npos);
  CHECK(untested_release({1, 37}).find("newer than 1.36") != std::string::npos);
}

TEST_CASE("kube version: podReplacementPolicy Failed where the release serves it") {
  CHECK(has_feature({1, 29}, KubeFeature::kPodReplacementPolicy));
  CHECK_FALSE(has_feature({1, 28}, KubeFeature::kPodReplacementPolicy));
  RenderOptions o;
  auto r = render_fixed(train_project(), o);  // the newest tested by default
  CHECK(object_of(r, "Job")["spec"]["podReplacementPolicy"] == "Failed");
  o.kube_version = {1, 28};
  r = render_fixed(train_project(), o);
  CHECK_FALSE(object_of(r, "Job")["spec"].contains("podReplacementPolicy"));
  // A JobSet's replicated Job too.
  auto p = train_project();
  p.train->target = "jobset";
  const auto rendered = render_fixed(p);
  const auto& js = object_of(rendered, "JobSet");
  CHECK(js["spec"]["replicatedJobs"][0]["template"]["spec"]["podReplacementPolicy"] == "Failed");
}

TEST_CASE("kube version: scheduling.managedBy is passed to each target's field") {
  auto p = train_project();
  p.scheduling.queue = "team-a";
  p.scheduling.managed_by = "kueue.x-k8s.io/multikueue";
  CHECK(object_of(render_fixed(p), "Job")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue");
  p.train->target = "jobset";
  CHECK(object_of(render_fixed(p), "JobSet")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue");
  p.train->target = "pytorchjob";
  CHECK(object_of(render_fixed(p), "PyTorchJob")["spec"]["runPolicy"]["managedBy"] ==
        "kueue.x-k8s.io/multikueue");
  p.train->target = "trainjob";
  CHECK(object_of(render_fixed(p), "TrainJob")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue");
  // Not set: no field.
  CHECK_FALSE(object_of(render_fixed(train_project()), "Job")["spec"].contains("managedBy"));
}

TEST_CASE("kube version: a Job's managedBy for a release that would drop it is refused") {
  auto p = train_project();
  p.scheduling.queue = "team-a";
  p.scheduling.managed_by = "kueue.x-k8s.io/multikueue";
  RenderOptions o;
  o.kube_version = {1, 32};  // beta, on
  CHECK(object_of(render_fixed(p, o), "Job")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue");
  o.kube_version = {1, 31};
  try {
    render_fixed(p, o);
    FAIL("rendered a managedBy that 1.31 drops");
  } catch (const UsageError& e) {
    const std::string m = e.what();
    CHECK(m.find("scheduling.managedBy") != std::string::npos);
    CHECK(m.find("1.31") != std::string::npos);
    CHECK(m.find("1.32") != std::string::npos);
  }
}
