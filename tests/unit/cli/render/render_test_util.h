#pragma once
// Helpers for the renderer's tests: projects built in code, and lookups in the result.

#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "project/project.h"
#include "render/render.h"

namespace ktrain::render::testing {

/// A valid training project: 2 CPU-only nodes, a pinned image.
inline project::Project train_project() {
  project::Project p;
  p.file = "ktrain.yaml";
  p.directory = "/src/demo";
  p.name = "demo";
  p.image.ref = "registry.example.com/ml/demo:v1";
  project::Train t;
  t.command = {"python", "train.py", "--epochs", "3"};
  t.nodes = 2;
  p.train = t;
  return p;
}

/// A valid serving project.
inline project::Project serve_project() {
  project::Project p;
  p.file = "ktrain.yaml";
  p.directory = "/src/demo";
  p.name = "api";
  p.image.ref = "registry.example.com/ml/api:v2";
  project::Serve s;
  s.command = {"python", "serve.py"};
  s.port = 8080;
  p.serve = s;
  return p;
}

/// Renders with the fixed run id "abcde" unless `options` names one.
inline Rendered render_fixed(const project::Project& p, RenderOptions options = {}) {
  if (options.run_id.empty()) options.run_id = "abcde";
  return render_project(p, options);
}

/// The `index`-th object of kind `kind`; throws when there is none.
inline const nlohmann::ordered_json& object_of(const Rendered& r, const std::string& kind,
                                               int index = 0) {
  for (const auto& o : r.objects) {
    if (o.value("kind", "") == kind && index-- == 0) return o;
  }
  throw std::runtime_error("no " + kind + " rendered");
}

/// The number of objects of kind `kind`.
inline int count_of(const Rendered& r, const std::string& kind) {
  int n = 0;
  for (const auto& o : r.objects) n += o.value("kind", "") == kind ? 1 : 0;
  return n;
}

/// The first container of the Job's (or Deployment's) pod template.
inline const nlohmann::ordered_json& container_of(const nlohmann::ordered_json& workload) {
  return workload.at("spec").at("template").at("spec").at("containers").at(0);
}

/// The env entry called `name` of `container`; null when there is none.
inline nlohmann::ordered_json env_of(const nlohmann::ordered_json& container,
                                     const std::string& name) {
  for (const auto& e : container.at("env")) {
    if (e.at("name") == name) return e;
  }
  return nullptr;
}

/// A file system held in memory.
class MemoryFileSystem : public FileSystem {
 public:
  std::map<std::string, std::string> files;
  std::string read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) throw std::runtime_error("cannot read '" + path + "'");
    return it->second;
  }
  void write_file(const std::string& path, const std::string& content) override {
    files[path] = content;
  }
  bool exists(const std::string& path) override { return files.count(path) > 0; }
  bool is_directory(const std::string&) override { return false; }
};

}  // namespace ktrain::render::testing
