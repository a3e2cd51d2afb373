// The key table (project/schema_table.h): the parser and the JSON Schema agree with
// it key by key, so that a key added to one and not the other fails here.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/json_schema.h"
#include "project/parse.h"
#include "project/schema_table.h"

using namespace ktrain::project;

namespace {

/// A valid project with a map for image and both train and serve, so that every
/// section can be reached with --set.
const char* const kSchemaBase =
    "name: schema-check\nimage: {ref: python:3.12}\ntrain: {command: [x]}\nserve: {port: 8080}\n";

/// The problems of kSchemaBase with `sets`.
std::vector<Problem> schema_problems(const std::vector<std::string>& sets) {
  try {
    parse_project(kSchemaBase, "ktrain.yaml", "/p", sets);
  } catch (const ProjectError& e) {
    return e.problems();
  }
  return {};
}

/// Whether `problem_path` is `path` or under it (path.x, path[0]).
bool at_or_under(const std::string& problem_path, const std::string& path) {
  if (problem_path.rfind(path, 0) != 0) return false;
  return problem_path.size() == path.size() || problem_path[path.size()] == '.' ||
         problem_path[path.size()] == '[';
}

std::string problems_at(const std::vector<Problem>& all, const std::string& path) {
  std::string out;
  for (const auto& p : all)
    if (at_or_under(p.path, path)) out += (out.empty() ? "" : "\n") + p.format();
  return out;
}

/// A section path of section_paths() as a --set path: train.volumes[] -> train.volumes[0].
std::string set_path(std::string path) {
  for (std::size_t i; (i = path.find("[]")) != std::string::npos;) path.replace(i, 2, "[0]");
  return path;
}

std::string join(const std::string& section, const std::string& key) {
  return section.empty() ? key : section + "." + key;
}

/// Other keys that a key's value is only valid with (cross-field rules).
std::vector<std::string> context(const std::string& key_path) {
  static const std::map<std::string, std::vector<std::string>> c = {
      {"train.mig", {"train.gpus=1"}},
      {"train.sync",
       {"image.build={\"base\": \"r.example.com/b:1\", \"repository\": \"r.example.com/t/a\"}"}},
      {"train.runtime", {"train.target=trainjob"}},
      {"serve.runtime", {"serve.target=kserve", "serve.model={\"uri\": \"s3://m/x\"}"}},
      {"serve.model", {"serve.target=kserve", "serve.runtime=triton"}},
      {"serve.model.uri", {"serve.target=kserve", "serve.runtime=triton"}},
      {"serve.model.format",
       {"serve.target=kserve", "serve.runtime=triton", "serve.model.uri=s3://m/x"}},
      {"serve.nodes", {"serve.target=lws"}},
      {"scheduling.managedBy", {"scheduling.queue=team-a"}},
      {"scheduling.tolerations[0].tolerationSeconds",
       {"scheduling.tolerations[0].effect=NoExecute"}},
  };
  auto it = c.find(key_path);
  return it == c.end() ? std::vector<std::string>{} : it->second;
}

/// A value of the wrong shape for `k`: a list where a map (or scalar-or-map) is
/// expected, a map where a scalar or a list is.
std::string wrong_value(const KeySpec& k) {
  if (k.list) return R"({"x": 1})";
  bool map = !k.section.empty() || k.kind == ValueKind::kEnvMap || k.kind == ValueKind::kLabelMap ||
             k.kind == ValueKind::kProjectLabels || k.kind == ValueKind::kSweep ||
             k.kind == ValueKind::kPatches;
  return map ? "[1]" : R"({"x": 1})";
}

}  // namespace

TEST_CASE("schema table: sections are where the parser finds them") {
  std::vector<std::string> paths;
  for (const auto& [path, section] : section_paths()) paths.push_back(path + "=" + section->name);
  CHECK(paths == std::vector<std::string>{"=project",
                                          "image=image",
                                          "image.build=build",
                                          "train=train",
                                          "train.volumes[]=volume",
                                          "train.retry[]=retry",
                                          "train.watchdog=watchdog",
                                          "train.notify=notify",
                                          "scheduling=scheduling",
                                          "scheduling.tolerations[]=toleration",
                                          "security=security",
                                          "launcher=launcher",
                                          "serve=serve",
                                          "serve.model=model",
                                          "serve.volumes[]=volume",
                                          "serve.autoscale=autoscale",
                                          "serve.autoscale.metric=metric",
                                          "serve.readiness=probe",
                                          "serve.liveness=probe",
                                          "serve.startup=probe",
                                          "serve.rollout=rollout"});
  CHECK(free_form_map_paths() == std::vector<std::string>{"labels", "image.build.env", "train.env",
                                                          "scheduling.nodeSelector", "serve.env"});
  // Every section is reached from the top level.
  for (const auto& s : project_sections()) {
    CAPTURE(s.name);
    bool reached = false;
    for (const auto& [path, section] : section_paths()) reached = reached || section == &s;
    CHECK(reached);
  }
}

TEST_CASE("schema table: the parser knows every key of every section, and no other") {
  for (const auto& [section_path, section] : section_paths()) {
    const std::string base = set_path(section_path);
    for (const auto& k : section->keys) {
      const std::string path = join(base, k.name);
      CAPTURE(path);
      // The table's example is a valid value: no problem at or under the key.
      auto sets = context(path);
      sets.push_back(path + "=" + k.example);
      CHECK(problems_at(schema_problems(sets), path) == "");
      // A value of the wrong shape is reported there: the parser reads the key.
      sets = context(path);
      sets.push_back(path + "=" + wrong_value(k));
      CHECK(problems_at(schema_problems(sets), path) != "");
    }
    // A key the table does not have is an unknown key.
    const std::string unknown = join(base, "zzzUnknownKey");
    CAPTURE(unknown);
    auto found = schema_problems({unknown + "=1"});
    bool reported = false;
    for (const auto& p : found)
      reported = reported || (p.path == unknown && p.message.rfind("unknown key", 0) == 0);
    CHECK(reported);
  }
}

TEST_CASE("schema table: the parser takes every value of every enumeration, and no other") {
  for (const auto& [section_path, section] : section_paths()) {
    for (const auto& k : section->keys) {
      if (k.kind != ValueKind::kEnum) continue;
      const std::string path = join(set_path(section_path), k.name);
      for (const auto& v : k.values) {
        CAPTURE(path + "=" + v);
        std::vector<std::string> sets = context(path);
        if (path == "scheduling.gang") sets.emplace_back("scheduling.queue=team-a");
        sets.emplace_back(path + "=" + v);
        CHECK(problems_at(schema_problems(sets), path) == "");
      }
      CAPTURE(path);
      CHECK(problems_at(schema_problems({path + "=zzz"}), path) != "");
    }
  }
  for (const auto& kind : project_key("project", "patches").values) {
    CAPTURE(kind);
    for (const auto& p : schema_problems({"patches." + kind + "={\"metadata\": {}}"}))
      CHECK(p.message.rfind("unknown kind", 0) == std::string::npos);
  }
  auto bad = schema_problems({"patches.Pod={\"metadata\": {}}"});
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].message.rfind("unknown kind", 0) == 0);
}

TEST_CASE("schema table: the parser reports missing exactly the keys marked required") {
  // A section whose required keys are all left out: each is reported missing.
  const std::map<std::string, std::string> reach = {
      {"project", ""},
      {"build", "image.build={\"context\": \".\"}"},
      {"train", "train={\"nodes\": 1}"},
      {"volume", "train.volumes[0]={\"readOnly\": true}"},
      {"serve", "serve={\"gpus\": 1}"},
      {"model", "serve.model={\"format\": \"onnx\"}"},
      {"autoscale", "serve.autoscale={\"min\": 1}"},
      {"metric", "serve.autoscale.metric={}"},
      {"probe", "serve.readiness={\"port\": 8080}"},
      {"retry", "train.retry=[{\"exitCodes\": [3]}]"},
      {"watchdog", "train.watchdog={}"},
  };
  for (const auto& [section_path, section] : section_paths()) {
    std::vector<std::string> required;
    for (const auto& k : section->keys)
      if (k.required) required.push_back(k.name);
    if (required.empty() || section_path.find("liveness") != std::string::npos ||
        section_path.find("startup") != std::string::npos ||
        section_path.rfind("serve.volumes", 0) == 0)
      continue;
    CAPTURE(section_path);
    auto it = reach.find(section->name);
    REQUIRE(it != reach.end());
    std::vector<Problem> found;
    if (it->second.empty()) {
      try {
        parse_project("train: {command: [x]}\n", "ktrain.yaml", "/p");
      } catch (const ProjectError& e) {
        found = e.problems();
      }
    } else {
      found = schema_problems({it->second});
    }
    for (const auto& key : required) {
      const std::string path = join(set_path(section_path), key);
      CAPTURE(path);
      bool missing = false;
      for (const auto& p : found)
        missing = missing || (p.path == path && p.message.rfind("missing", 0) == 0);
      CHECK(missing);
    }
    // And nothing else of the section is said to be missing.
    for (const auto& p : found) {
      if (p.message.rfind("missing", 0) != 0) continue;
      const std::string prefix = set_path(section_path);
      if (!at_or_under(p.path, prefix) && !prefix.empty()) continue;
      std::string key = prefix.empty() ? p.path : p.path.substr(prefix.size() + 1);
      CAPTURE(p.format());
      CHECK(project_key(section->name, key).required);
    }
  }
}

TEST_CASE("schema: a draft-07 schema with an $id for this version, every section and key") {
  const auto schema = project_json_schema();
  // What `ktrain schema` prints reads back as the same JSON.
  CHECK(nlohmann::ordered_json::parse(schema.dump(2)) == schema);
  CHECK(schema.at("$schema") == "http://json-schema.org/draft-07/schema#");
  CHECK(schema["$id"] == "https://ktrain.dev/schema/ktrain.yaml/" KTRAIN_VERSION ".json");
  CHECK(project_schema_id() == schema["$id"]);
  CHECK(schema["title"] == "ktrain.yaml");
  CHECK(schema["type"] == "object");
  CHECK(schema["required"] == nlohmann::ordered_json({"name", "image"}));
  for (const auto& s : project_sections()) {
    CAPTURE(s.name);
    const auto& body = s.name == "project" ? schema : schema.at("definitions").at(s.name);
    REQUIRE(body.is_object());
    CHECK(body.at("additionalProperties") == false);
    CHECK(body.at("description").is_string());
    std::vector<std::string> props;
    const auto& properties = body.at("properties");
    for (auto it = properties.begin(); it != properties.end(); ++it) props.push_back(it.key());
    CHECK(props == key_names(s.name));
    for (const auto& k : s.keys) {
      CAPTURE(k.name);
      const auto& p = properties.at(k.name);
      CHECK(p.at("description") == k.description);
      CHECK(!k.description.empty());
      CHECK(p.at("examples") ==
            nlohmann::ordered_json::array({nlohmann::ordered_json::parse(k.example)}));
      if (k.kind == ValueKind::kEnum) {
        auto values = nlohmann::ordered_json(k.values);
        if (!k.required) values.push_back(nullptr);
        CHECK(p.at("enum") == values);
      }
    }
  }
  CHECK(schema.at("definitions").size() == project_sections().size() - 1);
  // References name sections that are there.
  std::vector<std::string> refs;
  std::function<void(const nlohmann::ordered_json&)> walk = [&](const nlohmann::ordered_json& j) {
    if (j.is_object()) {
      if (j.contains("$ref")) refs.push_back(j["$ref"]);
      for (const auto& v : j) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(schema);
  CHECK(!refs.empty());
  for (const auto& r : refs) {
    CAPTURE(r);
    REQUIRE(r.rfind("#/definitions/", 0) == 0);
    CHECK(schema.at("definitions").contains(r.substr(14)));
  }
  // Patches: one property per kind that the parser takes.
  std::vector<std::string> kinds;
  const auto& patches = schema.at("properties").at("patches").at("properties");
  for (auto it = patches.begin(); it != patches.end(); ++it) kinds.push_back(it.key());
  CHECK(kinds == project_key("project", "patches").values);
}
