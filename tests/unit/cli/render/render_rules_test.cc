#include <doctest/doctest.h>

#include <set>
#include <string>

#include "base/error.h"
#include "render/render.h"
#include "render/templates.h"
#include "render/yaml_json.h"
#include "render_test_util.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;
using namespace ktrain::render::testing;

namespace {

project::Project sweep_project() {
  auto p = train_project();
  p.train->command = {"python", "train.py", "--lr={lr}", "--batch", "{batch}"};
  p.train->sweep = {{"lr", {"0.1", "0.01"}}, {"batch", {"256", "512"}}};
  return p;
}

}  // namespace

TEST_CASE("render sweep: one Service and Job per combination, first parameter slowest") {
  auto r = render_fixed(sweep_project());
  REQUIRE(r.objects.size() == 8);
  CHECK(count_of(r, "Job") == 4);
  CHECK(count_of(r, "Service") == 4);
  const std::vector<std::pair<std::string, std::string>> grid = {
      {"0.1", "256"}, {"0.1", "512"}, {"0.01", "256"}, {"0.01", "512"}};
  for (int k = 0; k < 4; ++k) {
    const auto& job = object_of(r, "Job", k);
    const std::string run = "demo-abcde-" + std::to_string(k);
    CHECK(job["metadata"]["name"] == run);
    CHECK(object_of(r, "Service", k)["metadata"]["name"] == run);
    CHECK(job["spec"]["template"]["spec"]["subdomain"] == run);
    const auto& c = container_of(job);
    CHECK(env_of(c, "KTRAIN_PARAM_LR")["value"] == grid[k].first);
    CHECK(env_of(c, "KTRAIN_PARAM_BATCH")["value"] == grid[k].second);
    CHECK(env_of(c, "KTRAIN_RUN")["value"] == run);
    CHECK(env_of(c, "KTRAIN_MASTER_ADDR")["value"] == run + "-0." + run);
    CHECK(c["args"] == ordered_json::array({"python", "train.py", "--lr=" + grid[k].first,
                                            "--batch", grid[k].second}));
  }
}

TEST_CASE("render sweep: every object carries the sweep label and its own run label") {
  auto r = render_fixed(sweep_project());
  for (const auto& o : r.objects) {
    CHECK(o["metadata"]["labels"]["ktrain.dev/sweep"] == "demo-abcde");
    CHECK(o["metadata"]["labels"]["ktrain.dev/run"] == o["metadata"]["name"]);
  }
  CHECK(object_of(r, "Job", 2)["spec"]["template"]["metadata"]["labels"]["ktrain.dev/sweep"] ==
        "demo-abcde");
}

TEST_CASE("render sweep: run_names lists the sweep's runs; a plain project has one") {
  CHECK(run_names(sweep_project(), "x1y2z") ==
        std::vector<std::string>{"demo-x1y2z-0", "demo-x1y2z-1", "demo-x1y2z-2", "demo-x1y2z-3"});
  CHECK(run_names(train_project(), "x1y2z") == std::vector<std::string>{"demo-x1y2z"});
  CHECK(run_name(train_project(), "x1y2z") == "demo-x1y2z");
}

TEST_CASE("render patches: merge into every object of the kind; null deletes") {
  auto p = train_project();
  p.patches.push_back(
      {"Job", ordered_json::parse(R"({"spec": {"backoffLimit": 5, "podFailurePolicy": null,
           "template": {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}}})")});
  p.patches.push_back(
      {"Service", ordered_json::parse(R"({"metadata": {"labels": {"extra": "yes"}}})")});
  auto r = render_fixed(p);
  const auto& job = object_of(r, "Job");
  CHECK(job["spec"]["backoffLimit"] == 5);
  CHECK_FALSE(job["spec"].contains("podFailurePolicy"));
  CHECK(job["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false");
  CHECK(job["spec"]["template"]["metadata"]["labels"]["ktrain.dev/run"] == "demo-abcde");
  CHECK(object_of(r, "Service")["metadata"]["labels"]["extra"] == "yes");
  CHECK(object_of(r, "Service")["metadata"]["labels"]["ktrain.dev/run"] == "demo-abcde");
  CHECK(r.warnings.empty());
}

TEST_CASE("render patches: arrays are replaced whole, patches apply in file order") {
  auto p = train_project();
  const auto containers = ordered_json::parse(
      R"([{"name": "train", "image": "reg/x:1", "command": ["/opt/ktrain/bin/ktrain-launch", "--"],
           "args": ["python", "x.py"]}])");
  p.patches.push_back(
      {"Job", {{"spec", {{"template", {{"spec", {{"containers", containers}}}}}}}}});
  p.patches.push_back({"Job", ordered_json::parse(R"({"spec": {"backoffLimit": 1}})")});
  p.patches.push_back({"Job", ordered_json::parse(R"({"spec": {"backoffLimit": 2}})")});
  auto r = render_fixed(p);
  const auto& job = object_of(r, "Job");
  CHECK(job["spec"]["template"]["spec"]["containers"] == containers);
  CHECK(job["spec"]["backoffLimit"] == 2);
}

TEST_CASE("render patches: a broken result is refused, naming the patch and the path") {
  auto refused = [](const char* kind, const char* patch, const char* says) {
    auto p = train_project();
    p.serve = serve_project().serve;
    p.patches.push_back({kind, ordered_json::parse(patch)});
    INFO(patch);
    CHECK_THROWS_WITH_AS(render_fixed(p), doctest::Contains(says), UsageError);
  };
  // A list of containers given in part: the image (and the launcher) are gone.
  refused("Job", R"({"spec": {"template": {"spec": {"containers": [{"name": "train"}]}}}})",
          "ktrain.yaml: patches.Job: spec.template.spec.containers[0].image: container \"train\" "
          "has no image");
  refused("Job", R"({"spec": {"template": {"spec": {"containers": [{"image": "reg/x:1"}]}}}})",
          "patches.Job: spec.template.spec.containers[0].name: every container needs a name");
  refused(
      "Job",
      R"({"spec": {"template": {"spec": {"containers": [{"name": "train", "image": "a:1"}]}}}})",
      "patches.Job: spec.template.spec.containers[0].command: the patch drops ktrain-launch");
  refused("Job", R"({"spec": {"template": {"spec": {"containers": null}}}})",
          "patches.Job: spec.template.spec.containers: the patched object has no containers");
  refused("Job", R"({"metadata": {"name": "other"}})",
          "patches.Job: metadata.name: a patch may not change it (demo-abcde)");
  refused("Service", R"({"apiVersion": "v2"})", "patches.Service: apiVersion");
  refused("Deployment",
          R"({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "a:1"}]}}}})",
          "patches.Deployment: spec.template.spec.containers: no container named \"serve\"");
  // A list of init containers replaces the injected one, which brings the launcher.
  refused(
      "Job",
      R"({"spec": {"template": {"spec": {"initContainers": [{"name": "fetch", "image": "f:1"}]}}}})",
      "patches.Job: spec.template.spec.initContainers: the patch drops the init container "
      "ktrain-launcher");
  {
    auto own = train_project();
    own.launcher.inject = project::Launcher::Inject::kNever;
    own.patches.push_back({"Job", ordered_json::parse(R"({"spec": {"template": {"spec":
        {"initContainers": [{"name": "fetch", "image": "f:1"}]}}}})")});
    CHECK(
        object_of(render_fixed(own), "Job")["spec"]["template"]["spec"]["initContainers"].size() ==
        1);
  }
  // A command set on purpose replaces the launcher; a sidecar with its image is fine.
  auto p = train_project();
  p.patches.push_back({"Job", ordered_json::parse(R"({"spec": {"template": {"spec": {"containers": [
      {"name": "train", "image": "a:1", "command": ["python", "train.py"]},
      {"name": "side", "image": "b:1"}]}}}})")});
  auto r = render_fixed(p);
  CHECK(object_of(r, "Job")["spec"]["template"]["spec"]["containers"].size() == 2);
}

TEST_CASE("render patches: a kind that matches nothing is a warning naming what was rendered") {
  auto p = train_project();
  p.patches.push_back({"Deployment", ordered_json::parse(R"({"spec": {"replicas": 2}})")});
  auto r = render_fixed(p);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("patches.Deployment") != std::string::npos);
  CHECK(r.warnings[0].find("Service, Job") != std::string::npos);
}

TEST_CASE("render image rules: latest and untagged images are warnings") {
  auto p = train_project();
  p.image.ref = "registry.example.com/ml/demo:latest";
  auto r = render_fixed(p);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("latest") != std::string::npos);
  p.image.ref = "localhost:5000/demo";
  r = render_fixed(p);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("no tag") != std::string::npos);
  CHECK(r.objects.size() == 2);  // still rendered
}

TEST_CASE("render image rules: --strict makes them errors (exit status 2)") {
  auto p = train_project();
  p.image.ref = "ubuntu";
  RenderOptions o;
  o.strict = true;
  try {
    render_fixed(p, o);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == 2);
    CHECK(std::string(e.what()).find("'ubuntu' has no tag") != std::string::npos);
  }
  p.image.ref = "ubuntu:22.04";
  CHECK_NOTHROW(render_fixed(p, o));
}

TEST_CASE("render image rules: a digest pins; a registry port is not a tag") {
  CHECK(image_pin_problem("ubuntu@sha256:0123abcd").empty());
  CHECK(image_pin_problem("ubuntu:latest@sha256:0123abcd").empty());
  CHECK(image_pin_problem("reg.io:5000/a/b:v1").empty());
  CHECK_FALSE(image_pin_problem("reg.io:5000/a/b").empty());
  CHECK_FALSE(image_pin_problem("b:latest").empty());
}

TEST_CASE("render image rules: options.image overrides image.ref (a built digest)") {
  auto p = train_project();
  RenderOptions o;
  o.image = "registry.example.com/ml/demo@sha256:abc";
  auto r = render_fixed(p, o);
  CHECK(container_of(object_of(r, "Job"))["image"] == "registry.example.com/ml/demo@sha256:abc");
}

TEST_CASE("render: the same project and options give byte-identical output") {
  auto p = sweep_project();
  p.labels = {{"z", "1"}, {"a", "2"}};
  p.serve = serve_project().serve;
  const std::string a = to_yaml(render_fixed(p).objects);
  const std::string b = to_yaml(render_fixed(p).objects);
  CHECK(a == b);
  CHECK(to_json(render_fixed(p).objects) == to_json(render_fixed(p).objects));
  // File order, not sorted order.
  const Rendered r = render_fixed(p);
  const auto& labels = r.objects[0]["metadata"]["labels"];
  std::vector<std::string> keys;
  for (auto it = labels.begin(); it != labels.end(); ++it) keys.push_back(it.key());
  CHECK(keys.back() == "a");
}

TEST_CASE("render: the default run id is stable, 5 of [a-z0-9], and follows the project") {
  auto p = train_project();
  const std::string id = default_run_id(p);
  CHECK(id.size() == 5);
  for (char c : id) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')));
  CHECK(default_run_id(p) == id);
  RenderOptions o;  // no run id: render derives the same one
  auto r = render_project(p, o);
  CHECK(object_of(r, "Job")["metadata"]["name"] == "demo-" + id);
  p.train->nodes = 3;
  CHECK(default_run_id(p) != id);
}

TEST_CASE("render: run ids must be DNS-1123 labels and keep host names within 63 characters") {
  auto p = train_project();
  RenderOptions o;
  for (const char* bad : {"Bad", "a_b", "-ab", "ab-", "a.b", "ab cd"}) {
    o.run_id = bad;
    CHECK_THROWS_AS(render_project(p, o), UsageError);
  }
  o.run_id = "a-1";
  CHECK_NOTHROW(render_project(p, o));
  o.run_id = std::string(56, 'a');  // demo- + 56 + -1 = 63: fits
  CHECK_NOTHROW(render_project(p, o));
  o.run_id = std::string(57, 'a');
  CHECK_THROWS_WITH_AS(render_project(p, o), doctest::Contains("63 characters"), UsageError);
}

TEST_CASE("render: run_id_from gives 5 characters of [a-z0-9]") {
  std::set<std::string> ids;
  for (std::uint64_t e : {0ULL, 1ULL, 35ULL, 36ULL, 0xffffffffffffffffULL}) {
    const auto id = run_id_from(e);
    CHECK(id.size() == 5);
    ids.insert(id);
  }
  CHECK(ids.size() == 5);
}

TEST_CASE("render: a project with neither train nor serve is a usage error") {
  auto p = train_project();
  p.train.reset();
  CHECK_THROWS_AS(render_fixed(p), UsageError);
}

TEST_CASE("render --templates: skeletons come from the folder, fields are still set structurally") {
  MemoryFileSystem fs;
  fs.files["/tpl/job.yaml"] = R"(apiVersion: batch/v1
kind: Job
metadata:
  annotations:
    owner: "platform-team"
spec:
  template:
    spec:
      containers:
        - name: sidecar
          image: "busybox:1.36"
)";
  fs.files["/tpl/service-headless.yaml"] = "apiVersion: v1\nkind: Service\nspec: {}\n";
  RenderOptions o;
  o.templates_dir = "/tpl";
  o.fs = &fs;
  auto r = render_fixed(train_project(), o);
  const auto& job = object_of(r, "Job");
  CHECK(job["metadata"]["annotations"]["owner"] == "platform-team");
  CHECK(job["metadata"]["name"] == "demo-abcde");
  const auto& containers = job["spec"]["template"]["spec"]["containers"];
  REQUIRE(containers.size() == 2);
  CHECK(containers[0]["name"] == "sidecar");
  CHECK(containers[1]["name"] == "train");
  CHECK(containers[1]["image"] == "registry.example.com/ml/demo:v1");
  CHECK(job["spec"]["completionMode"] == "Indexed");
  CHECK(object_of(r, "Service")["spec"]["clusterIP"] == "None");
}

TEST_CASE("render --templates: a missing file is a usage error that names it") {
  MemoryFileSystem fs;
  fs.files["/tpl/job.yaml"] = "apiVersion: batch/v1\nkind: Job\n";
  RenderOptions o;
  o.templates_dir = "/tpl";
  o.fs = &fs;
  CHECK_THROWS_WITH_AS(render_fixed(train_project(), o), doctest::Contains("service-headless.yaml"),
                       UsageError);
}

TEST_CASE("render --templates: a template that is not YAML names the file and line") {
  MemoryFileSystem fs;
  fs.files["/tpl/service-headless.yaml"] = "kind: Service\nspec: [unclosed\n";
  RenderOptions o;
  o.templates_dir = "/tpl";
  o.fs = &fs;
  CHECK_THROWS_WITH_AS(render_fixed(train_project(), o),
                       doctest::Contains("/tpl/service-headless.yaml:"), Error);
}

TEST_CASE("render: every embedded template is a Kubernetes object skeleton") {
  std::set<std::string> names;
  for (const auto& t : embedded_templates()) {
    names.insert(t.name);
    const auto j = parse_yaml_document(t.content, t.name);
    CHECK(j.is_object());
    // What render reads: the JSON made at build time, equal to the YAML read now.
    CHECK(ordered_json::parse(t.json) == j);
    CHECK(ordered_json::parse(t.json).dump() == j.dump());  // the same key order, too
    CHECK(j.contains("apiVersion"));
    CHECK(j.contains("kind"));
  }
  for (const char* n : {"job.yaml", "service-headless.yaml", "podgroup.yaml", "deployment.yaml",
                        "service.yaml", "hpa.yaml"}) {
    CHECK(names.count(n) == 1);
  }
}

TEST_CASE("render: rendered objects hold no nulls (unset placeholders are left out)") {
  auto p = train_project();
  p.serve = serve_project().serve;
  p.scheduling.gang = "volcano";
  auto r = render_fixed(p);
  std::function<bool(const ordered_json&)> has_null = [&](const ordered_json& v) {
    if (v.is_null()) return true;
    if (v.is_structured()) {
      for (const auto& x : v) {
        if (has_null(x)) return true;
      }
    }
    return false;
  };
  for (const auto& o : r.objects) CHECK_FALSE(has_null(o));
}

TEST_CASE("render_each hands over what render_project returns, object by object, in order") {
  auto p = sweep_project();
  p.patches.push_back({"Job", ordered_json::parse(R"({"spec": {"backoffLimit": 7}})")});
  p.patches.push_back({"PodGroup", ordered_json::parse(R"({"spec": {"minMember": 9}})")});
  RenderOptions o;
  o.run_id = "abcde";
  const Rendered all = render_project(p, o);
  std::vector<ordered_json> each;
  const auto warnings =
      render_each(p, o, [&each](ordered_json&& obj) { each.push_back(std::move(obj)); });
  REQUIRE(each.size() == all.objects.size());
  for (size_t i = 0; i < each.size(); ++i) CHECK(each[i].dump() == all.objects[i].dump());
  CHECK(warnings == all.warnings);
  CHECK(object_of(all, "Job")["spec"]["backoffLimit"] == 7);  // patched before handed over
  REQUIRE(warnings.size() == 1);                              // no PodGroup was rendered
  CHECK(warnings[0].find("patches.PodGroup matches no rendered object") != std::string::npos);
  // Without a run id, the id is the same as render_project derives.
  RenderOptions d;
  std::vector<ordered_json> each_default;
  render_each(p, d, [&](ordered_json&& obj) { each_default.push_back(std::move(obj)); });
  CHECK(each_default.front()["metadata"]["name"] ==
        render_project(p, d).objects.front()["metadata"]["name"]);
}
