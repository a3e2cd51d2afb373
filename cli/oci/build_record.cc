// The record of what `ktrain build` pushed: one JSON object, an entry per repository.

#include "oci/build_record.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ktrain::oci {

namespace {

using nlohmann::json;

/// The record's versioned shape: {"version": 1, "images": {REPOSITORY: {...}}}.
constexpr int kVersion = 1;

json parse_record(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + ": not a build record (" + e.what() +
                "); remove it and run 'ktrain build' again");
  }
  if (!j.is_object() || !j.contains("images") || !j["images"].is_object()) {
    throw Error(path +
                ": not a build record (no \"images\" object); remove it and run "
                "'ktrain build' again");
  }
  return j;
}

}  // namespace

std::string build_record_path(const std::string& project_dir) {
  return (project_dir.empty() ? std::string(".") : project_dir) + "/" + kStateDir + "/build.json";
}

std::optional<BuiltImage> find_built_image(const std::string& record_text,
                                           const std::string& repository, const std::string& path) {
  const json j = parse_record(record_text, path);
  auto it = j["images"].find(repository);
  if (it == j["images"].end()) return std::nullopt;
  const json& e = *it;
  BuiltImage b;
  b.repository = repository;
  if (!e.is_object() || !e.contains("digest") || !e["digest"].is_string()) {
    throw Error(path + ": the entry of " + repository + " has no digest");
  }
  b.digest = e["digest"].get<std::string>();
  if (b.digest.rfind("sha256:", 0) != 0 || b.digest.size() != 71 ||
      b.digest.find_first_not_of("0123456789abcdef", 7) != std::string::npos) {
    throw Error(path + ": the entry of " + repository + " has a bad digest '" + b.digest + "'");
  }
  if (auto t = e.find("tags"); t != e.end() && t->is_array()) {
    for (const auto& tag : *t) {
      if (tag.is_string()) b.tags.push_back(tag.get<std::string>());
    }
  }
  if (auto c = e.find("cuda"); c != e.end() && c->is_string()) b.cuda = c->get<std::string>();
  if (auto w = e.find("built"); w != e.end() && w->is_string()) b.built = w->get<std::string>();
  if (auto s = e.find("sync"); s != e.end() && s->is_object()) {
    if (auto o = s->find("onto"); o != s->end() && o->is_string()) b.onto = o->get<std::string>();
    if (auto d = s->find("depth"); d != s->end() && d->is_number_integer()) b.depth = d->get<int>();
  }
  return b;
}

std::string record_built_image(const std::string& record_text, const BuiltImage& built) {
  json j = {{"version", kVersion}, {"images", json::object()}};
  if (!record_text.empty()) {
    try {
      j = parse_record(record_text, "");
    } catch (const Error&) {
      // A record that cannot be read is replaced: it only ever names what was pushed.
    }
  }
  j["version"] = kVersion;
  json e = {{"digest", built.digest}, {"tags", built.tags}};
  if (!built.cuda.empty()) e["cuda"] = built.cuda;
  if (!built.built.empty()) e["built"] = built.built;
  if (!built.onto.empty()) e["sync"] = {{"onto", built.onto}, {"depth", built.depth}};
  j["images"][built.repository] = e;
  return j.dump(2) + "\n";
}

}  // namespace ktrain::oci
