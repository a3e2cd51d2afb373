#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "base/error.h"
#include "render/dev.h"
#include "render/render.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

namespace {

const ordered_json& train_container(const Rendered& r) {
  return object_of(r, "Job")["spec"]["template"]["spec"]["containers"][0];
}

}  // namespace

TEST_CASE("dev: one node of the project's Job, named <name>-dev, with the dev label") {
  auto p = train_project();
  p.train->nodes = 8;
  p.train->gpus = 4;
  p.train->shm = "16Gi";
  p.train->env = {{"DATA", "/data"}};
  p.labels = {{"team", "vision"}};
  const auto r = render_dev(p, {}, {});
  CHECK(dev_run_name(p) == "demo-dev");
  REQUIRE(count_of(r, "Job") == 1);
  const auto& job = object_of(r, "Job");
  CHECK(job["metadata"]["name"] == "demo-dev");
  CHECK(job["metadata"]["labels"][kLabelDev] == "true");
  CHECK(job["metadata"]["labels"]["team"] == "vision");
  CHECK(job["metadata"]["labels"][kLabelRun] == "demo-dev");
  CHECK(job["spec"]["template"]["metadata"]["labels"][kLabelDev] == "true");
  CHECK(job["spec"]["parallelism"] == 1);
  CHECK(job["spec"]["completions"] == 1);
  CHECK(job["spec"]["backoffLimit"] == 0);
  CHECK(job["spec"]["ttlSecondsAfterFinished"] == kDevTtlSeconds);
  const auto& c = train_container(r);
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "4");
  CHECK_FALSE(c.contains("args"));
  bool data = false, preflight_off = false;
  for (const auto& e : c["env"]) {
    if (e["name"] == "DATA" && e["value"] == "/data") data = true;
    if (e["name"] == "KTRAIN_PREFLIGHT" && e["value"] == "off") preflight_off = true;
  }
  CHECK(data);
  CHECK(preflight_off);
  bool shm = false;
  for (const auto& m : c["volumeMounts"]) shm = shm || m["mountPath"] == "/dev/shm";
  CHECK(shm);
  // The headless Service of a one-node run comes along (the launcher's address in it).
  CHECK(object_of(r, "Service")["metadata"]["name"] == "demo-dev");
}

TEST_CASE("dev: the container idles: sh running the idle loop with its timeout and step") {
  auto p = train_project();
  DevSettings s;
  s.idle_timeout_s = 1800;
  const auto c = train_container(render_dev(p, s, {}));
  REQUIRE(c["command"].size() == 6);
  CHECK(c["command"][0] == "/bin/sh");
  CHECK(c["command"][1] == "-c");
  CHECK(c["command"][3] == "ktrain-dev");
  CHECK(c["command"][4] == "1800");
  CHECK(c["command"][5] == "30");
  s.idle_timeout_s = 0;
  CHECK(train_container(render_dev(p, s, {}))["command"][4] == "0");
}

TEST_CASE("dev: the idle loop survives the kubelet's expansion of $$ and $(NAME)") {
  // Kubelets make "$$" of a container's command "$", and replace "$(NAME)" with the
  // variable NAME: the script must contain neither.
  const std::string script = dev_idle_command(60)[2];
  CHECK(script.find("$$") == std::string::npos);
  CHECK_FALSE(std::regex_search(script, std::regex(R"(\$\([A-Za-z_][A-Za-z0-9_]*\))")));
  CHECK(script.find("trap 'exit 0' TERM") != std::string::npos);
}

TEST_CASE("dev: how often the idle loop looks") {
  CHECK(dev_idle_step(3) == 1);
  CHECK(dev_idle_step(200) == 10);
  CHECK(dev_idle_step(3600) == 30);
  CHECK(dev_idle_step(0) == 3600);
}

TEST_CASE("dev: --gpus overrides train.gpus; a sweep, a deadline and other targets are left out") {
  auto p = train_project();
  p.train->gpus = 8;
  p.train->target = "pytorchjob";
  p.train->deadline_s = 60;
  p.train->ttl_s = 30;
  p.train->restarts = 3;
  p.train->sweep = {{"lr", {"0.1", "0.2", "0.3"}}};
  DevSettings s;
  s.gpus = 1;
  const auto r = render_dev(p, s, {});
  CHECK(count_of(r, "Job") == 1);
  CHECK(count_of(r, "PyTorchJob") == 0);
  const auto& job = object_of(r, "Job");
  CHECK_FALSE(job["spec"].contains("activeDeadlineSeconds"));
  CHECK(job["spec"]["ttlSecondsAfterFinished"] == 30);
  CHECK(job["spec"]["backoffLimit"] == 0);
  CHECK(train_container(r)["resources"]["limits"]["nvidia.com/gpu"] == "1");
  CHECK(job["metadata"]["name"] == "demo-dev");
  CHECK_FALSE(job["metadata"]["labels"].contains(kLabelSweep));
}

TEST_CASE("dev: a project without train is a usage error; its serve section is left out") {
  CHECK_THROWS_AS(render_dev(serve_project(), {}, {}), UsageError);
  auto p = train_project();
  p.serve = serve_project().serve;
  const auto r = render_dev(p, {}, {});
  CHECK(count_of(r, "Deployment") == 0);
  CHECK(count_of(r, "Job") == 1);
}
