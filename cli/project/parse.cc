#include "project/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <istream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "base/cuda.h"
#include "base/duration.h"
#include "base/image_ref.h"
#include "base/names.h"
#include "base/quantity.h"
#include "base/suggest.h"
#include "project/schema_table.h"
#include "project/targets.h"
#include "project/tree.h"

namespace ktrain::project {

namespace {

using Kind = Value::Kind;
using Keys = std::vector<std::string>;

// The key lists and enumerations come from the table that the JSON Schema is also
// generated from (project/schema_table.h).
const Keys kTopKeys = key_names("project");
const Keys kLauncherKeys = key_names("launcher");
const Keys kInjects = project_key("launcher", "inject").values;
const Keys kImageKeys = key_names("image");
const Keys kBuildKeys = key_names("build");
const Keys kTrainKeys = key_names("train");
const Keys kVolumeKeys = key_names("volume");
const Keys kSchedulingKeys = key_names("scheduling");
const Keys kTolerationKeys = key_names("toleration");
const Keys kOperators = project_key("toleration", "operator").values;
const Keys kSecurityKeys = key_names("security");
const Keys kServeKeys = key_names("serve");
const Keys kAutoscaleKeys = key_names("autoscale");
const Keys kMetricKeys = key_names("metric");
const Keys kProbeKeys = key_names("probe");
const Keys kRolloutKeys = key_names("rollout");
const Keys kPatchKinds = project_key("project", "patches").values;

const Keys kModelKeys = key_names("model");
const Keys kTrainTargets = project_key("train", "target").values;
const Keys kServeTargets = project_key("serve", "target").values;
const Keys kServeRuntimes = project_key("serve", "runtime").values;

const Keys kFrameworks = project_key("train", "framework").values;
const Keys kPreflights = project_key("train", "preflight").values;
const Keys kGangs = project_key("scheduling", "gang").values;
const Keys kEffects = project_key("toleration", "effect").values;

/// Maps whose keys are free-form (the rest of a --set path is one key).
const Keys kFreeFormMaps = free_form_map_paths();

/// Every known key path, for suggestions across sections (`gpus` -> `train.gpus`).
const std::vector<std::pair<std::string, Keys>>& sections() {
  static const auto s = [] {
    std::vector<std::pair<std::string, Keys>> out;
    for (const auto& [path, section] : section_paths())
      out.emplace_back(path, key_names(section->name));
    return out;
  }();
  return s;
}

std::string join(const Keys& keys, const std::string& sep = ", ") {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : sep) + k;
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* const kNameRule =
    "lowercase letters, digits and '-', starting and ending with a letter or digit";

/// Walks the tree, fills the Project and collects problems.
class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}

  std::vector<Problem> problems;

  void add(const Origin& o, const std::string& path, const std::string& message) {
    Problem p;
    if (o.set.empty()) {
      p.file = file_;
      p.line = o.line;
      p.column = o.column;
    } else {
      p.file = o.set;
    }
    p.path = path;
    p.message = message;
    problems.push_back(std::move(p));
  }

  void expected(const Value& v, const std::string& path, const std::string& what,
                const std::string& hint = "") {
    add(v.origin, path,
        "expected " + what + ", found " + describe(v) + (hint.empty() ? "" : "; " + hint));
  }

  /// Reports unknown keys of map `v` (known: `keys`), with suggestions.
  void check_keys(const Value& v, const std::string& path, const std::string& section,
                  const Keys& keys) {
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      const std::string& key = v.entries[i].first;
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      std::string child = join_path(path, key);
      std::string near = closest_match(key, keys);
      // A key of another section: at the top level it belongs in that section (gpus ->
      // train.gpus); inside a section, it is not valid there, and is said so.
      std::string elsewhere;
      if (near.empty()) {
        for (const auto& [sec, sec_keys] : sections()) {
          if (sec == section || sec.empty()) continue;
          for (const auto& k : sec_keys) {
            if (lower(k) == lower(key)) {
              elsewhere = join_path(sec, k);
              break;
            }
          }
          if (!elsewhere.empty()) break;
        }
      }
      if (!near.empty()) {
        add(v.key_origins[i], child, "unknown key; did you mean `" + join_path(path, near) + "`?");
      } else if (!elsewhere.empty() && section.empty()) {
        add(v.key_origins[i], child, "unknown key; did you mean `" + elsewhere + "`?");
      } else if (!elsewhere.empty()) {
        add(v.key_origins[i], child,
            "unknown key here (`" + elsewhere +
                "` is a key of another section); expected one of: " + join(keys));
      } else {
        add(v.key_origins[i], child, "unknown key; expected one of: " + join(keys));
      }
    }
  }

  /// Whether `v` is a map; reports it otherwise.
  bool map(const Value& v, const std::string& path, const std::string& example) {
    if (v.kind == Kind::kMap) return true;
    expected(v, path, "a map" + (example.empty() ? "" : " like " + example));
    return false;
  }

  /// Whether `v` is a list; reports it otherwise.
  bool list(const Value& v, const std::string& path, const std::string& example) {
    if (v.kind == Kind::kList) return true;
    expected(v, path, "a list" + (example.empty() ? "" : " like " + example));
    return false;
  }

  std::optional<std::string> scalar(const Value& v, const std::string& path,
                                    const std::string& what) {
    if (v.kind == Kind::kScalar) return v.text;
    expected(v, path, what);
    return std::nullopt;
  }

  std::optional<std::int64_t> integer(const Value& v, const std::string& path, std::int64_t min,
                                      std::int64_t max, const std::string& what) {
    if (v.kind != Kind::kScalar) {
      expected(v, path, what);
      return std::nullopt;
    }
    std::string t = v.text;
    if (!t.empty() && t[0] == '+') t.erase(0, 1);
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || n < min || n > max) {
      expected(v, path, what);
      return std::nullopt;
    }
    return n;
  }

  std::optional<int> whole(const Value& v, const std::string& path, int min,
                           int max = std::numeric_limits<int>::max()) {
    std::string what = "a whole number >= " + std::to_string(min);
    if (max != std::numeric_limits<int>::max())
      what = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    auto n = integer(v, path, min, max, what);
    if (!n) return std::nullopt;
    return static_cast<int>(*n);
  }

  std::optional<int> port(const Value& v, const std::string& path) {
    auto n = integer(v, path, 1, 65535, "a port number from 1 to 65535");
    if (!n) return std::nullopt;
    return static_cast<int>(*n);
  }

  std::optional<bool> boolean(const Value& v, const std::string& path) {
    if (v.kind == Kind::kScalar && !v.quoted) {
      if (v.text == "true" || v.text == "True" || v.text == "TRUE") return true;
      if (v.text == "false" || v.text == "False" || v.text == "FALSE") return false;
    }
    expected(v, path, "true or false");
    return std::nullopt;
  }

  std::optional<std::string> one_of(const Value& v, const std::string& path, const Keys& allowed) {
    if (v.kind == Kind::kScalar &&
        std::find(allowed.begin(), allowed.end(), v.text) != allowed.end())
      return v.text;
    std::string near = v.kind == Kind::kScalar ? closest_match(v.text, allowed) : "";
    expected(v, path, "one of " + join(allowed, " | "),
             near.empty() ? "" : "did you mean `" + near + "`?");
    return std::nullopt;
  }

  std::optional<std::string> quantity(const Value& v, const std::string& path, bool allow_zero) {
    const std::string what = "a Kubernetes quantity like 500m, 2, 16Gi";
    if (v.kind != Kind::kScalar) {
      expected(v, path, what);
      return std::nullopt;
    }
    auto q = parse_quantity(v.text);
    if (!q) {
      expected(v, path, what, quantity_hint(v.text));
      return std::nullopt;
    }
    if (*q < 0 || (!allow_zero && *q == 0)) {
      expected(v, path, allow_zero ? "a quantity >= 0" : "a quantity greater than 0");
      return std::nullopt;
    }
    return v.text;
  }

  std::optional<std::int64_t> duration(const Value& v, const std::string& path, bool allow_zero) {
    const std::string what = "a duration like 90s, 30m, 24h, 7d or 1h30m";
    if (v.kind != Kind::kScalar) {
      expected(v, path, what);
      return std::nullopt;
    }
    auto d = parse_duration_seconds(v.text);
    if (!d) {
      bool digits = !v.text.empty() && std::all_of(v.text.begin(), v.text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
      expected(v, path, what, digits ? "add a unit (s, m, h or d)" : "");
      return std::nullopt;
    }
    if (!allow_zero && *d == 0) {
      expected(v, path, "a duration greater than 0, like 24h");
      return std::nullopt;
    }
    return d;
  }

  std::optional<std::string> dns_label(const Value& v, const std::string& path, std::size_t max,
                                       const std::string& example) {
    auto s = scalar(v, path, "a name like " + example);
    if (!s) return std::nullopt;
    if (s->size() > max) {
      expected(v, path,
               "a name of at most " + std::to_string(max) + " characters (it has " +
                   std::to_string(s->size()) + ")");
      return std::nullopt;
    }
    if (!is_dns1123_label(*s)) {
      expected(v, path, std::string("a DNS-1123 label (") + kNameRule + ") like " + example);
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> dns_subdomain(const Value& v, const std::string& path, std::size_t max,
                                           const std::string& example) {
    auto s = scalar(v, path, "a name like " + example);
    if (!s) return std::nullopt;
    if (s->size() > max) {
      expected(v, path,
               "a name of at most " + std::to_string(max) + " characters (it has " +
                   std::to_string(s->size()) + ")");
      return std::nullopt;
    }
    if (!is_dns1123_subdomain(*s)) {
      expected(v, path,
               std::string("a DNS-1123 name (") + kNameRule + ", and '.') like " + example);
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> image(const Value& v, const std::string& path) {
    auto s = scalar(v, path, "an image reference like registry.example.com/team/app:v1");
    if (!s) return std::nullopt;
    std::string problem = image_ref_problem(*s);
    if (!problem.empty()) {
      add(v.origin, path, problem);
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> absolute_path(const Value& v, const std::string& path,
                                           const std::string& example) {
    auto s = scalar(v, path, "an absolute path like " + example);
    if (!s) return std::nullopt;
    bool dotdot = false;
    std::istringstream parts(*s);
    for (std::string part; std::getline(parts, part, '/');) dotdot |= part == "..";
    if (s->empty() || (*s)[0] != '/' || dotdot || s->find(':') != std::string::npos) {
      expected(v, path, "an absolute path like " + example + " (no '..' or ':')");
      return std::nullopt;
    }
    return s;
  }

  std::vector<std::string> strings(const Value& v, const std::string& path,
                                   const std::string& example) {
    std::vector<std::string> out;
    if (!list(v, path, example)) return out;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      if (auto s = scalar(v.items[i], path + "[" + std::to_string(i) + "]", "a string"))
        out.push_back(*s);
    }
    return out;
  }

  StringPairs env(const Value& v, const std::string& path) {
    StringPairs out;
    if (!map(v, path, "{NCCL_DEBUG: WARN}")) return out;
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      const auto& [k, val] = v.entries[i];
      std::string p = join_path(path, k);
      bool ok = true;
      if (!is_env_var_name(k)) {
        add(v.key_origins[i], p,
            "expected an environment variable name (letters, digits, '_', '-' and '.', not "
            "starting with a digit) like NCCL_DEBUG, found \"" +
                k + "\"");
        ok = false;
      }
      auto s = scalar(val, p, "a string value like \"1\" (quote it to be sure)");
      if (ok && s) out.emplace_back(k, *s);
    }
    return out;
  }

  StringPairs labels(const Value& v, const std::string& path, bool reserve) {
    StringPairs out;
    if (!map(v, path, "{team: vision}")) return out;
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      const auto& [k, val] = v.entries[i];
      std::string p = join_path(path, k);
      bool ok = true;
      if (!is_label_key(k)) {
        add(v.key_origins[i], p,
            "expected a Kubernetes label key ([prefix/]name: name at most 63 letters, digits, "
            "'-', '_' or '.', starting and ending alphanumeric) like team or example.com/team, "
            "found \"" +
                k + "\"");
        ok = false;
      } else if (reserve &&
                 (k.rfind("ktrain.dev/", 0) == 0 || k == "app.kubernetes.io/managed-by" ||
                  k == "app.kubernetes.io/name")) {
        add(v.key_origins[i], p, "this label is set by ktrain; choose another key");
        ok = false;
      }
      auto s = scalar(val, p, "a label value like vision");
      if (s && !is_label_value(*s)) {
        expected(val, p,
                 "a label value (at most 63 letters, digits, '-', '_' or '.', starting and "
                 "ending alphanumeric) like vision");
        ok = false;
      }
      if (ok && s) out.emplace_back(k, *s);
    }
    return out;
  }

 private:
  std::string file_;
};

/// The entry `key` of map `v`, or nullptr when absent or null (null means unset).
const Value* field(const Value& v, const std::string& key) {
  const Value* f = v.find(key);
  if (!f || f->kind == Kind::kNull) return nullptr;
  return f;
}

const Origin& key_origin(const Value& map, const std::string& key) {
  for (std::size_t i = 0; i < map.entries.size(); ++i)
    if (map.entries[i].first == key) return map.key_origins[i];
  return map.origin;
}

nlohmann::ordered_json to_json(const Value& v) {
  switch (v.kind) {
    case Kind::kNull:
      return nullptr;
    case Kind::kList: {
      auto a = nlohmann::ordered_json::array();
      for (const auto& item : v.items) a.push_back(to_json(item));
      return a;
    }
    case Kind::kMap: {
      auto o = nlohmann::ordered_json::object();
      for (const auto& [k, child] : v.entries) o[k] = to_json(child);
      return o;
    }
    case Kind::kScalar:
      break;
  }
  if (v.quoted) return v.text;
  const std::string& t = v.text;
  if (t == "true" || t == "True" || t == "TRUE") return true;
  if (t == "false" || t == "False" || t == "FALSE") return false;
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (!t.empty() && ec == std::errc() && end == t.data() + t.size()) return n;
  double d = 0;
  auto [dend, dec] = std::from_chars(t.data(), t.data() + t.size(), d);
  if (!t.empty() && dec == std::errc() && dend == t.data() + t.size() &&
      t.find_first_of("0123456789") != std::string::npos)
    return d;
  return t;
}

class ProjectParser {
 public:
  ProjectParser(Checker& c, const std::string& directory) : c_(c), directory_(directory) {}

  void parse(const Value& root, Project& p) {
    c_.check_keys(root, "", "", kTopKeys);
    if (const Value* v = field(root, "name")) {
      if (auto s = c_.dns_label(*v, "name", 40, "resnet50")) {
        // Every run has a Service named after the project, and a Service's name (as a
        // TrainJob's and an InferenceService's) is a DNS-1035 label: a letter first.
        if (!std::isalpha(static_cast<unsigned char>((*s)[0]))) {
          c_.expected(*v, "name",
                      "a name that starts with a letter (the runs' Services are named after "
                      "it, and Kubernetes wants a letter first), like llm-7b");
        } else {
          p.name = *s;
        }
      }
    } else {
      c_.add(root.origin, "name", "missing; every project needs a name like `name: resnet50`");
    }
    if (const Value* v = field(root, "namespace"))
      if (auto s = c_.dns_label(*v, "namespace", 63, "ml-team-a")) p.namespace_ = *s;
    if (const Value* v = field(root, "labels")) p.labels = c_.labels(*v, "labels", true);
    if (const Value* v = field(root, "image")) {
      image(*v, p.image);
    } else {
      c_.add(root.origin, "image",
             "missing; say which image to run, like `image: registry.example.com/team/app:v1`");
    }
    if (const Value* v = field(root, "train")) {
      p.train.emplace();
      train(*v, *p.train);
    }
    if (const Value* v = field(root, "scheduling")) scheduling(*v, p.scheduling);
    if (const Value* v = field(root, "security")) security(*v, p.security);
    if (const Value* v = field(root, "launcher")) launcher(*v, p.launcher);
    if (const Value* v = field(root, "serve")) {
      p.serve.emplace();
      serve(*v, *p.serve);
    }
    if (!field(root, "train") && !field(root, "serve")) {
      c_.add(root.origin, "",
             "nothing to run: add a `train` section (like `train: {command: [python, "
             "train.py]}`) or a `serve` section");
    }
    if (const Value* v = field(root, "patches")) patches(*v, p);
    cross_checks(root, p);
  }

 private:
  void image(const Value& v, Image& out) {
    if (v.kind == Kind::kScalar) {
      if (auto s = c_.image(v, "image")) out.ref = *s;
      return;
    }
    if (!c_.map(v, "image", "registry.example.com/team/app:v1 or {ref: ..., build: {...}}")) return;
    c_.check_keys(v, "image", "image", kImageKeys);
    if (const Value* r = field(v, "ref"))
      if (auto s = c_.image(*r, "image.ref")) out.ref = *s;
    if (const Value* r = field(v, "pullSecrets")) {
      if (c_.list(*r, "image.pullSecrets", "[regcred]")) {
        for (std::size_t i = 0; i < r->items.size(); ++i) {
          if (auto s = c_.dns_subdomain(r->items[i], "image.pullSecrets[" + std::to_string(i) + "]",
                                        253, "regcred"))
            out.pull_secrets.push_back(*s);
        }
      }
    }
    if (const Value* b = field(v, "build")) {
      out.build.emplace();
      build(*b, *out.build);
    }
    if (!field(v, "ref") && !field(v, "build")) {
      c_.add(v.origin, "image.ref",
             "missing; give `ref` (the image to run) or `build` (how ktrain build makes it)");
    }
  }

  void build(const Value& v, ImageBuild& out) {
    const std::string path = "image.build";
    out.context = directory_;
    if (!c_.map(v, path, "{base: nvcr.io/nvidia/pytorch:24.08-py3, repository: ...}")) return;
    c_.check_keys(v, path, path, kBuildKeys);
    if (const Value* b = field(v, "base")) {
      if (auto s = c_.image(*b, path + ".base")) out.base = *s;
    } else {
      c_.add(v.origin, path + ".base",
             "missing; the image to build on, like nvcr.io/nvidia/pytorch:24.08-py3");
    }
    if (const Value* r = field(v, "repository")) {
      if (auto s = c_.image(*r, path + ".repository")) {
        if (parse_image_ref(*s).has_tag_or_digest()) {
          c_.expected(*r, path + ".repository",
                      "a repository without a tag or digest, like "
                      "registry.example.com/ml/resnet50 (ktrain build pushes by digest)");
        } else {
          out.repository = *s;
        }
      }
    } else {
      c_.add(v.origin, path + ".repository",
             "missing; where to push, like registry.example.com/ml/resnet50");
    }
    if (const Value* x = field(v, "context")) {
      if (auto s = c_.scalar(*x, path + ".context", "a folder like . or ./src")) {
        std::filesystem::path ctx(*s);
        if (ctx.is_relative()) ctx = std::filesystem::path(directory_) / ctx;
        std::string norm = ctx.lexically_normal().string();
        while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
        out.context = norm;
      }
    }
    if (const Value* x = field(v, "ignore"))
      out.ignore = c_.strings(*x, path + ".ignore", "[\"data/\", \"*.ckpt\"]");
    if (const Value* x = field(v, "workdir"))
      if (auto s = c_.absolute_path(*x, path + ".workdir", "/workspace")) out.workdir = *s;
    if (const Value* x = field(v, "env")) out.env = c_.env(*x, path + ".env");
  }

  void train(const Value& v, Train& t) {
    if (!c_.map(v, "train", "{command: [python, train.py], gpus: 8}")) {
      train_ok_ = false;
      return;
    }
    c_.check_keys(v, "train", "train", kTrainKeys);
    if (const Value* x = field(v, "command")) {
      t.command = command(*x, "train.command");
    } else {
      c_.add(v.origin, "train.command",
             "missing; what to run in each worker, like `command: [python, train.py]`");
    }
    if (const Value* x = field(v, "framework"))
      if (auto s = c_.one_of(*x, "train.framework", kFrameworks)) t.framework = *s;
    if (const Value* x = field(v, "target"))
      if (auto s = c_.one_of(*x, "train.target", kTrainTargets)) t.target = *s;
    if (const Value* x = field(v, "runtime"))
      if (auto s = c_.dns_subdomain(*x, "train.runtime", 253, "torch-distributed")) t.runtime = *s;
    if (const Value* x = field(v, "nodes"))
      if (auto n = c_.whole(*x, "train.nodes", 1)) t.nodes = *n;
    if (const Value* x = field(v, "gpus"))
      if (auto n = c_.whole(*x, "train.gpus", 0)) t.gpus = *n;
    if (const Value* x = field(v, "processesPerNode"))
      if (auto n = c_.whole(*x, "train.processesPerNode", 1)) t.processes_per_node = *n;
    if (const Value* x = field(v, "mig")) {
      if (auto s = c_.scalar(*x, "train.mig", "a MIG profile like 1g.10gb")) {
        if (!is_mig_profile(*s))
          c_.expected(*x, "train.mig", "a MIG profile like 1g.10gb or 3g.40gb");
        else
          t.mig = *s;
      }
    }
    if (const Value* x = field(v, "gpuType")) gpu_type(*x, "train.gpuType", t.gpu_type);
    if (const Value* x = field(v, "cuda")) cuda(*x, "train.cuda", t.cuda);
    if (const Value* x = field(v, "cpu"))
      if (auto s = c_.quantity(*x, "train.cpu", false)) t.cpu = *s;
    if (const Value* x = field(v, "memory"))
      if (auto s = c_.quantity(*x, "train.memory", false)) t.memory = *s;
    if (const Value* x = field(v, "shm"))
      if (auto s = c_.quantity(*x, "train.shm", false)) t.shm = *s;
    if (const Value* x = field(v, "env")) t.env = c_.env(*x, "train.env");
    if (const Value* x = field(v, "envFrom")) env_from(*x, "train.envFrom", t.env_from);
    if (const Value* x = field(v, "volumes")) volumes(*x, "train.volumes", t.volumes, mounts_);
    if (const Value* x = field(v, "restarts"))
      if (auto n = c_.whole(*x, "train.restarts", 0)) t.restarts = *n;
    if (const Value* x = field(v, "deadline"))
      t.deadline_s = c_.duration(*x, "train.deadline", false);
    if (const Value* x = field(v, "ttl")) t.ttl_s = c_.duration(*x, "train.ttl", true);
    if (const Value* x = field(v, "gracePeriod")) {
      if (auto g = c_.duration(*x, "train.gracePeriod", false)) t.grace_period_s = *g;
    }
    if (const Value* x = field(v, "preflight"))
      if (auto s = c_.one_of(*x, "train.preflight", kPreflights)) t.preflight = *s;
    if (const Value* x = field(v, "sweep")) sweep(*x, t);
    if (const Value* x = field(v, "command")) placeholders(*x, t);
  }

  static bool is_mig_profile(const std::string& s) {
    // <n>g.<m>gb, optionally +me
    std::size_t i = 0;
    auto digits = [&] {
      std::size_t start = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      return i > start;
    };
    if (!digits() || s.compare(i, 2, "g.") != 0) return false;
    i += 2;
    if (!digits() || s.compare(i, 2, "gb") != 0) return false;
    i += 2;
    return i == s.size() || s.substr(i) == "+me";
  }

  std::vector<std::string> command(const Value& v, const std::string& path) {
    std::vector<std::string> out;
    if (!c_.list(v, path, "[python, train.py]")) return out;
    if (v.items.empty()) {
      c_.expected(v, path, "a non-empty list like [python, train.py]");
      return out;
    }
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      if (auto s = c_.scalar(v.items[i], path + "[" + std::to_string(i) + "]", "a string"))
        out.push_back(*s);
    }
    return out;
  }

  void env_from(const Value& v, const std::string& path, std::vector<EnvFrom>& out) {
    if (!c_.list(v, path, "[secret/wandb, configMap/hparams]")) return;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      const Value& item = v.items[i];
      const std::string what = "secret/NAME or configMap/NAME, like secret/wandb";
      auto s = c_.scalar(item, p, what);
      if (!s) continue;
      auto slash = s->find('/');
      std::string kind = slash == std::string::npos ? "" : s->substr(0, slash);
      std::string name = slash == std::string::npos ? "" : s->substr(slash + 1);
      if (kind != "secret" && kind != "configMap") {
        c_.expected(item, p, what);
        continue;
      }
      if (!is_dns1123_subdomain(name)) {
        c_.expected(item, p, kind + "/NAME with NAME a DNS-1123 name (" + kNameRule + ", and '.')");
        continue;
      }
      out.push_back({kind == "secret" ? EnvFrom::Kind::kSecret : EnvFrom::Kind::kConfigMap, name});
    }
  }

  void gpu_type(const Value& x, const std::string& path, std::string& out) {
    if (auto s = c_.scalar(x, path, "a GPU product like NVIDIA-H100-80GB-HBM3")) {
      if (!is_label_value(*s) || s->empty())
        c_.expected(x, path,
                    "a GPU product label value like NVIDIA-H100-80GB-HBM3 (letters, digits, "
                    "'-', '_', '.'; at most 63)");
      else
        out = *s;
    }
  }

  void cuda(const Value& x, const std::string& path, std::string& out) {
    if (auto s = c_.scalar(x, path, "a CUDA version like 12.1")) {
      if (auto v = parse_cuda_version(*s))
        out = v->str();
      else
        c_.expected(x, path, "a CUDA version like 12.1 or 11.8 (MAJOR.MINOR)");
    }
  }

  /// `path` (train.volumes or serve.volumes) into `out`; `mounts` holds the mount
  /// paths taken so far in that pod.
  void volumes(const Value& v, const std::string& path, std::vector<Volume>& out,
               std::map<std::string, std::string>& mounts) {
    if (!c_.list(v, path, "[{claim: imagenet, mount: /data}]")) return;
    std::string checkpoint_at;  // the volume marked `checkpoint: true`
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      const Value& item = v.items[i];
      if (!c_.map(item, p, "{claim: imagenet, mount: /data, readOnly: true}")) continue;
      c_.check_keys(item, p, path + "[]", kVolumeKeys);
      Volume vol;
      int sources = 0;
      bool ok = true;
      struct Source {
        const char* key;
        Volume::Kind kind;
      };
      for (Source s :
           {Source{"claim", Volume::Kind::kClaim}, Source{"configMap", Volume::Kind::kConfigMap},
            Source{"secret", Volume::Kind::kSecret}}) {
        if (const Value* x = field(item, s.key)) {
          ++sources;
          vol.kind = s.kind;
          if (auto n = c_.dns_subdomain(*x, p + "." + s.key, 253, "imagenet"))
            vol.source = *n;
          else
            ok = false;
        }
      }
      if (const Value* x = field(item, "emptyDir")) {
        ++sources;
        vol.kind = Volume::Kind::kEmptyDir;
        bool empty_map = x->kind == Kind::kMap && x->entries.empty();
        bool yes = x->kind == Kind::kScalar && !x->quoted && x->text == "true";
        if (!empty_map && !yes) {
          c_.expected(*x, p + ".emptyDir", "{} or true");
          ok = false;
        }
      }
      if (sources != 1) {
        c_.add(item.origin, p,
               "expected exactly one of claim, configMap, secret or emptyDir, found " +
                   std::to_string(sources));
        ok = false;
      }
      if (const Value* x = field(item, "mount")) {
        if (auto m = c_.absolute_path(*x, p + ".mount", "/data")) {
          std::string norm = std::filesystem::path(*m).lexically_normal().string();
          while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
          if (auto it = mounts.find(norm); it != mounts.end()) {
            c_.add(x->origin, p + ".mount",
                   "mount path " + norm + " is already used by " + it->second);
            ok = false;
          } else {
            mounts.emplace(norm, p);
            vol.mount = *m;
          }
        } else {
          ok = false;
        }
      } else {
        c_.add(item.origin, p + ".mount", "missing; where to mount it, like `mount: /data`");
        ok = false;
      }
      if (const Value* x = field(item, "readOnly")) {
        if (auto b = c_.boolean(*x, p + ".readOnly")) vol.read_only = *b;
      }
      if (const Value* x = field(item, "checkpoint")) {
        if (auto b = c_.boolean(*x, p + ".checkpoint")) vol.checkpoint = *b;
        if (vol.checkpoint && path == "train.volumes" &&
            (vol.read_only || vol.kind == Volume::Kind::kConfigMap ||
             vol.kind == Volume::Kind::kSecret)) {
          c_.add(x->origin, p + ".checkpoint",
                 "the training job writes its checkpoints here: it cannot be " +
                     std::string(vol.read_only ? "readOnly"
                                               : "a configMap or secret (those are read-only)") +
                     "; use a claim (or emptyDir)");
          ok = false;
        } else if (vol.checkpoint && !checkpoint_at.empty()) {
          c_.add(x->origin, p + ".checkpoint",
                 "only one volume can keep the checkpoints; " + checkpoint_at + " does already");
          ok = false;
        } else if (vol.checkpoint) {
          checkpoint_at = p;
        }
      }
      if (ok) out.push_back(vol);
    }
  }

  void sweep(const Value& v, Train& t) {
    if (!c_.map(v, "train.sweep", "{lr: [\"0.1\", \"0.01\"]}")) return;
    std::map<std::string, std::string> env_names;
    std::size_t combinations = 1;
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      const auto& [name, values] = v.entries[i];
      const std::string p = join_path("train.sweep", name);
      // `parallel: N` (a number, not a list of values): at most N runs at once.
      if (name == "parallel" && values.kind != Kind::kList) {
        if (auto n = c_.whole(values, p, 1)) t.sweep_parallel = static_cast<int>(*n);
        continue;
      }
      bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
                std::all_of(name.begin(), name.end(), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                });
      if (!ok) {
        c_.add(v.key_origins[i], p,
               "expected a parameter name (a letter, then letters, digits or '_') like lr, "
               "found \"" +
                   name + "\"");
        continue;
      }
      std::string upper = name;
      for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (auto it = env_names.find(upper); it != env_names.end()) {
        c_.add(v.key_origins[i], p,
               "clashes with `" + it->second + "`: both become KTRAIN_PARAM_" + upper);
        continue;
      }
      env_names.emplace(upper, name);
      SweepParam param{name, {}};
      if (!c_.list(values, p, "[\"0.1\", \"0.01\"]")) continue;
      if (values.items.empty()) {
        c_.expected(values, p, "a non-empty list of values like [\"0.1\", \"0.01\"]");
        continue;
      }
      std::set<std::string> seen;
      for (std::size_t k = 0; k < values.items.size(); ++k) {
        const std::string vp = p + "[" + std::to_string(k) + "]";
        if (auto s = c_.scalar(values.items[k], vp, "a value like \"0.1\"")) {
          if (!seen.insert(*s).second) {
            c_.add(values.items[k].origin, vp, "duplicate value \"" + *s + "\"");
            continue;
          }
          param.values.push_back(*s);
        }
      }
      combinations *= std::max<std::size_t>(param.values.size(), 1);
      if (combinations > 100000) combinations = 100000;
      t.sweep.push_back(std::move(param));
    }
    if (t.sweep_parallel > 0 && t.sweep.empty()) {
      c_.add(v.origin, "train.sweep",
             "`parallel` limits how many runs of the sweep go at once, but there are no "
             "parameters; add some, like `lr: [\"0.1\", \"0.01\"]`");
    }
    if (combinations > 1000) {
      c_.add(v.origin, "train.sweep",

             "expected at most 1000 combinations, found " + (combinations >= 100000
                                                                 ? std::string("more than 100000")
                                                                 : std::to_string(combinations)));
    }
  }

  void placeholders(const Value& v, const Train& t) {
    if (v.kind != Kind::kList) return;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const Value& item = v.items[i];
      if (item.kind != Kind::kScalar) continue;
      const std::string& s = item.text;
      for (std::size_t pos = s.find('{'); pos != std::string::npos; pos = s.find('{', pos + 1)) {
        std::size_t end = pos + 1;
        while (end < s.size() &&
               (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_'))
          ++end;
        if (end == pos + 1 || end >= s.size() || s[end] != '}' ||
            !std::isalpha(static_cast<unsigned char>(s[pos + 1])))
          continue;
        std::string name = s.substr(pos + 1, end - pos - 1);
        bool known = std::any_of(t.sweep.begin(), t.sweep.end(),
                                 [&](const SweepParam& sp) { return sp.name == name; });
        if (known) continue;
        Keys params;
        for (const auto& sp : t.sweep) params.push_back(sp.name);
        std::string msg = "unknown placeholder {" + name + "}: ";
        if (params.empty()) {
          msg += "there is no train.sweep; add `sweep: {" + name + ": [...]}` to train";
        } else {
          std::string near = closest_match(name, params);
          msg += near.empty() ? "sweep parameters are " + join(params)
                              : "did you mean {" + near + "}?";
        }
        c_.add(item.origin, "train.command[" + std::to_string(i) + "]", msg);
      }
    }
  }

  void scheduling(const Value& v, Scheduling& s) {
    if (!c_.map(v, "scheduling", "{queue: team-a, gang: kueue}")) return;
    c_.check_keys(v, "scheduling", "scheduling", kSchedulingKeys);
    if (const Value* x = field(v, "queue"))
      if (auto n = c_.dns_subdomain(*x, "scheduling.queue", 63, "team-a")) s.queue = *n;
    if (const Value* x = field(v, "gang"))
      if (auto g = c_.one_of(*x, "scheduling.gang", kGangs)) s.gang = *g;
    if (const Value* x = field(v, "priority"))
      if (auto n = c_.dns_subdomain(*x, "scheduling.priority", 253, "high")) s.priority = *n;
    if (const Value* x = field(v, "nodeSelector"))
      s.node_selector = c_.labels(*x, "scheduling.nodeSelector", false);
    if (const Value* x = v.find("tolerations")) {
      s.tolerations_set = true;
      if (x->kind != Kind::kNull) tolerations(*x, s.tolerations);
    }
    if (const Value* x = field(v, "runtimeClass"))
      if (auto n = c_.dns_subdomain(*x, "scheduling.runtimeClass", 253, "nvidia"))
        s.runtime_class = *n;
  }

  void tolerations(const Value& v, std::vector<Toleration>& out) {
    const std::string example =
        "\"nvidia.com/gpu:NoSchedule\", \"dedicated=ml:NoSchedule\" or {key, operator, value, "
        "effect, tolerationSeconds}";
    if (!c_.list(v, "scheduling.tolerations", "[\"nvidia.com/gpu:NoSchedule\"]")) return;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const std::string p = "scheduling.tolerations[" + std::to_string(i) + "]";
      const Value& item = v.items[i];
      if (item.kind == Kind::kScalar) {
        if (auto t = short_toleration(item.text)) {
          out.push_back(*t);
        } else {
          c_.expected(item, p, "a toleration like " + example);
        }
        continue;
      }
      if (item.kind != Kind::kMap) {
        c_.expected(item, p, "a toleration like " + example);
        continue;
      }
      c_.check_keys(item, p, "scheduling.tolerations[]", kTolerationKeys);
      Toleration t;
      t.op = "Equal";
      bool ok = true;
      if (const Value* x = field(item, "key")) {
        auto k = c_.scalar(*x, p + ".key", "a taint key like nvidia.com/gpu");
        if (k && !k->empty() && !is_label_key(*k)) {
          c_.expected(*x, p + ".key", "a taint key like nvidia.com/gpu");
          ok = false;
        } else if (k) {
          t.key = *k;
        }
      }
      if (const Value* x = field(item, "operator")) {
        if (auto o = c_.one_of(*x, p + ".operator", kOperators))
          t.op = *o;
        else
          ok = false;
      }
      if (const Value* x = field(item, "value")) {
        auto val = c_.scalar(*x, p + ".value", "a taint value like ml");
        if (val && !is_label_value(*val)) {
          c_.expected(*x, p + ".value", "a taint value like ml");
          ok = false;
        } else if (val) {
          t.value = *val;
        }
      }
      if (const Value* x = field(item, "effect")) {
        if (auto e = c_.one_of(*x, p + ".effect", kEffects))
          t.effect = *e;
        else
          ok = false;
      }
      if (const Value* x = field(item, "tolerationSeconds")) {
        t.toleration_seconds =
            c_.integer(*x, p + ".tolerationSeconds", 0, std::numeric_limits<std::int64_t>::max(),
                       "a whole number of seconds >= 0");
        if (t.effect != "NoExecute") {
          c_.add(x->origin, p + ".tolerationSeconds",
                 "only applies with effect: NoExecute (effect is " +
                     (t.effect.empty() ? std::string("not set") : t.effect) + ")");
          ok = false;
        }
      }
      if (t.op == "Exists" && !t.value.empty()) {
        c_.add(item.origin, p + ".value", "must be empty with operator: Exists");
        ok = false;
      }
      if (t.op == "Equal" && t.key.empty()) {
        c_.add(item.origin, p + ".key", "missing; operator: Equal needs a key (or use Exists)");
        ok = false;
      }
      if (ok) out.push_back(t);
    }
  }

  static std::optional<Toleration> short_toleration(const std::string& s) {
    Toleration t;
    std::string rest = s;
    if (auto colon = rest.rfind(':'); colon != std::string::npos) {
      t.effect = rest.substr(colon + 1);
      if (std::find(kEffects.begin(), kEffects.end(), t.effect) == kEffects.end())
        return std::nullopt;
      rest = rest.substr(0, colon);
    }
    if (auto eq = rest.find('='); eq != std::string::npos) {
      t.key = rest.substr(0, eq);
      t.value = rest.substr(eq + 1);
      t.op = "Equal";
      if (!is_label_value(t.value)) return std::nullopt;
    } else {
      t.key = rest;
      t.op = "Exists";
    }
    if (!is_label_key(t.key)) return std::nullopt;
    return t;
  }

  void launcher(const Value& v, Launcher& l) {
    if (!c_.map(v, "launcher", "{inject: auto, image: registry.example.com/ktrain/launch:0.1.0}"))
      return;
    c_.check_keys(v, "launcher", "launcher", kLauncherKeys);
    if (const Value* x = field(v, "image")) {
      if (auto s = c_.image(*x, "launcher.image")) {
        l.image = *s;
        l.image_from = "launcher.image";
      }
    }
    if (const Value* x = field(v, "inject")) {
      if (auto s = c_.one_of(*x, "launcher.inject", kInjects)) {
        l.inject = *s == "always"  ? Launcher::Inject::kAlways
                   : *s == "never" ? Launcher::Inject::kNever
                                   : Launcher::Inject::kAuto;
      }
    }
  }

  void security(const Value& v, Security& s) {
    if (!c_.map(v, "security", "{runAsUser: 1000}")) return;
    c_.check_keys(v, "security", "security", kSecurityKeys);
    auto id = [&](const char* key, std::optional<std::int64_t>& out) {
      if (const Value* x = field(v, key))
        out = c_.integer(*x, std::string("security.") + key, 0, 2147483647,
                         "a user or group id from 0 to 2147483647");
    };
    id("runAsUser", s.run_as_user);
    id("runAsGroup", s.run_as_group);
    id("fsGroup", s.fs_group);
    if (const Value* x = field(v, "runAsNonRoot"))
      if (auto b = c_.boolean(*x, "security.runAsNonRoot")) s.run_as_non_root = *b;
    if (const Value* x = field(v, "addCapabilities")) {
      if (c_.list(*x, "security.addCapabilities", "[IPC_LOCK]")) {
        for (std::size_t i = 0; i < x->items.size(); ++i) {
          const std::string p = "security.addCapabilities[" + std::to_string(i) + "]";
          auto cap = c_.scalar(x->items[i], p, "a capability like IPC_LOCK");
          if (!cap) continue;
          bool ok = !cap->empty() && std::isupper(static_cast<unsigned char>((*cap)[0])) &&
                    std::all_of(cap->begin(), cap->end(), [](char ch) {
                      return std::isupper(static_cast<unsigned char>(ch)) ||
                             std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
                    });
          if (!ok) {
            c_.expected(x->items[i], p, "a capability like IPC_LOCK or SYS_PTRACE (uppercase)");
            continue;
          }
          s.add_capabilities.push_back(*cap);
        }
      }
    }
    if (s.run_as_non_root && s.run_as_user && *s.run_as_user == 0) {
      c_.add(field(v, "runAsUser")->origin, "security.runAsUser",
             "0 is root, but runAsNonRoot is true; use a non-zero id or set runAsNonRoot: false");
    }
  }

  void serve(const Value& v, Serve& s) {
    if (!c_.map(v, "serve", "{command: [python, serve.py], port: 8080}")) {
      serve_ok_ = false;
      return;
    }
    c_.check_keys(v, "serve", "serve", kServeKeys);
    if (const Value* x = field(v, "command")) s.command = command(*x, "serve.command");
    if (const Value* x = field(v, "target"))
      if (auto t = c_.one_of(*x, "serve.target", kServeTargets)) s.target = *t;
    if (const Value* x = field(v, "runtime"))
      if (auto r = c_.one_of(*x, "serve.runtime", kServeRuntimes)) s.runtime = *r;
    if (const Value* x = field(v, "model")) model(*x, s);
    if (const Value* x = field(v, "nodes"))
      if (auto n = c_.whole(*x, "serve.nodes", 1)) s.nodes = *n;
    if (const Value* x = field(v, "port")) {
      if (auto n = c_.port(*x, "serve.port")) s.port = *n;
    } else if (!field(v, "runtime")) {
      c_.add(v.origin, "serve.port", "missing; the port the server listens on, like `port: 8080`");
    }
    if (const Value* x = field(v, "gpus"))
      if (auto n = c_.whole(*x, "serve.gpus", 0)) s.gpus = *n;
    if (const Value* x = field(v, "cpu"))
      if (auto q = c_.quantity(*x, "serve.cpu", false)) s.cpu = *q;
    if (const Value* x = field(v, "memory"))
      if (auto q = c_.quantity(*x, "serve.memory", false)) s.memory = *q;
    if (const Value* x = field(v, "gpuType")) gpu_type(*x, "serve.gpuType", s.gpu_type);
    if (const Value* x = field(v, "cuda")) cuda(*x, "serve.cuda", s.cuda);
    if (const Value* x = field(v, "shm"))
      if (auto q = c_.quantity(*x, "serve.shm", false)) s.shm = *q;
    if (const Value* x = field(v, "env")) s.env = c_.env(*x, "serve.env");
    if (const Value* x = field(v, "envFrom")) env_from(*x, "serve.envFrom", s.env_from);
    if (const Value* x = field(v, "volumes"))
      volumes(*x, "serve.volumes", s.volumes, serve_mounts_);
    if (!s.shm.empty()) {
      if (auto it = serve_mounts_.find("/dev/shm"); it != serve_mounts_.end()) {
        c_.add(field(v, "shm")->origin, "serve.shm",
               "mounts /dev/shm, which " + it->second + " also mounts");
      }
    }
    if (const Value* x = field(v, "startup")) s.startup = probe(*x, "serve.startup");
    if (const Value* x = field(v, "spread")) {
      if (auto b = c_.boolean(*x, "serve.spread")) s.spread = *b;
    }
    if (const Value* x = field(v, "disruption")) {
      if (auto b = c_.boolean(*x, "serve.disruption")) s.disruption = *b;
    }
    if (const Value* x = field(v, "replicas")) s.replicas = c_.whole(*x, "serve.replicas", 0);
    if (const Value* x = field(v, "autoscale")) {
      s.autoscale.emplace();
      autoscale(*x, *s.autoscale);
      if (field(v, "replicas")) {
        c_.add(key_origin(v, "replicas"), "serve.replicas",
               "cannot be combined with serve.autoscale (the autoscaler owns the replica count); "
               "remove one of them");
      }
    }
    if (const Value* x = field(v, "readiness")) s.readiness = probe(*x, "serve.readiness");
    if (const Value* x = field(v, "liveness")) s.liveness = probe(*x, "serve.liveness");
    if (const Value* x = field(v, "rollout")) rollout(*x, s.rollout);
  }

  void model(const Value& v, Serve& s) {
    const std::string p = "serve.model";
    if (!c_.map(v, p, "{uri: s3://models/resnet50}")) return;
    c_.check_keys(v, p, p, kModelKeys);
    if (const Value* x = field(v, "uri")) {
      if (auto u = c_.scalar(*x, p + ".uri", "a model URI like s3://models/resnet50")) {
        static const char* const kSchemes[] = {"s3://",    "gs://",   "pvc://", "hf://",
                                               "https://", "http://", "oci://"};
        bool known = false;
        for (const char* scheme : kSchemes) known = known || u->rfind(scheme, 0) == 0;
        if (!known || u->find_first_of(" \t\r\n") != std::string::npos) {
          c_.expected(*x, p + ".uri",
                      "a model URI: s3://, gs://, pvc://, hf://, oci:// or https://, like "
                      "s3://models/resnet50");
        }
        s.model_uri = *u;  // (when bad, kept so that it is not also reported missing)
      }
    } else {
      c_.add(v.origin, p + ".uri", "missing; where the model is, like `uri: s3://models/resnet50`");
    }
    if (const Value* x = field(v, "format")) {
      if (auto f = c_.dns_label(*x, p + ".format", 63, "onnx")) s.model_format = *f;
    }
  }

  void autoscale(const Value& v, Autoscale& a) {
    const std::string p = "serve.autoscale";
    if (!c_.map(v, p, "{min: 2, max: 20, cpu: 70}")) return;
    c_.check_keys(v, p, p, kAutoscaleKeys);
    std::optional<int> min, max;
    if (const Value* x = field(v, "min")) min = c_.whole(*x, p + ".min", 1);
    if (const Value* x = field(v, "max")) {
      max = c_.whole(*x, p + ".max", 1);
    } else {
      c_.add(v.origin, p + ".max", "missing; the most replicas, like `max: 20`");
    }
    if (min) a.min = *min;
    if (max) a.max = *max;
    if (min && max && *min > *max) {
      c_.add(field(v, "min")->origin, p + ".min",
             "expected min <= max, found min " + std::to_string(*min) + " > max " +
                 std::to_string(*max));
    }
    if (!field(v, "min") && max && *max < 1) a.min = 1;
    if (const Value* x = field(v, "cpu")) a.cpu = c_.whole(*x, p + ".cpu", 1, 100);
    if (const Value* x = field(v, "metric")) {
      const std::string mp = p + ".metric";
      if (c_.map(*x, mp, "{name: DCGM_FI_DEV_GPU_UTIL, target: \"70\"}")) {
        c_.check_keys(*x, mp, mp, kMetricKeys);
        PodsMetric m;
        bool ok = true;
        if (const Value* n = field(*x, "name")) {
          auto s = c_.scalar(*n, mp + ".name", "a metric name like DCGM_FI_DEV_GPU_UTIL");
          if (s && (s->empty() || s->find_first_of(" \t/") != std::string::npos)) {
            c_.expected(*n, mp + ".name", "a metric name like DCGM_FI_DEV_GPU_UTIL");
            ok = false;
          } else if (s) {
            m.name = *s;
          } else {
            ok = false;
          }
        } else {
          c_.add(x->origin, mp + ".name", "missing; the metric, like DCGM_FI_DEV_GPU_UTIL");
          ok = false;
        }
        if (const Value* tv = field(*x, "target")) {
          if (auto q = c_.quantity(*tv, mp + ".target", false))
            m.target = *q;
          else
            ok = false;
        } else {
          c_.add(x->origin, mp + ".target", "missing; the average value per pod, like \"70\"");
          ok = false;
        }
        if (ok) a.metric = m;
      }
    }
  }

  std::optional<Probe> probe(const Value& v, const std::string& p) {
    Probe pr;
    if (v.kind == Kind::kScalar) {
      if (v.text.empty() || v.text[0] != '/') {
        c_.expected(v, p, "an HTTP path like /healthz or {path: /healthz}");
        return std::nullopt;
      }
      pr.path = v.text;
      return pr;
    }
    if (!c_.map(v, p, "{path: /healthz}")) return std::nullopt;
    c_.check_keys(v, p, "serve.readiness", kProbeKeys);
    bool ok = true;
    if (const Value* x = field(v, "path")) {
      auto s = c_.scalar(*x, p + ".path", "an HTTP path like /healthz");
      if (s && (s->empty() || (*s)[0] != '/')) {
        c_.expected(*x, p + ".path", "an HTTP path like /healthz");
        ok = false;
      } else if (s) {
        pr.path = *s;
      } else {
        ok = false;
      }
    } else {
      c_.add(v.origin, p + ".path", "missing; the HTTP path to probe, like /healthz");
      ok = false;
    }
    auto num = [&](const char* key, int min, int& out) {
      if (const Value* x = field(v, key)) {
        if (auto n = c_.whole(*x, p + "." + key, min))
          out = *n;
        else
          ok = false;
      }
    };
    if (const Value* x = field(v, "port")) {
      if (auto n = c_.port(*x, p + ".port"))
        pr.port = *n;
      else
        ok = false;
    }
    num("initialDelaySeconds", 0, pr.initial_delay_s);
    num("periodSeconds", 1, pr.period_s);
    num("failureThreshold", 1, pr.failure_threshold);
    if (!ok) return std::nullopt;
    return pr;
  }

  std::optional<nlohmann::json> surge(const Value& v, const std::string& p) {
    const std::string what = "a whole number >= 0 or a percentage like 25%";
    if (v.kind == Kind::kScalar && !v.text.empty() && v.text.back() == '%') {
      std::string digits = v.text.substr(0, v.text.size() - 1);
      int n = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && n >= 0 &&
          n <= 100)
        return nlohmann::json(v.text);
      c_.expected(v, p, what);
      return std::nullopt;
    }
    if (auto n = c_.integer(v, p, 0, std::numeric_limits<int>::max(), what))
      return nlohmann::json(*n);
    return std::nullopt;
  }

  void rollout(const Value& v, Rollout& r) {
    if (!c_.map(v, "serve.rollout", "{maxSurge: 1, maxUnavailable: 0}")) return;
    c_.check_keys(v, "serve.rollout", "serve.rollout", kRolloutKeys);
    bool ok = true;
    if (const Value* x = field(v, "maxSurge")) {
      if (auto j = surge(*x, "serve.rollout.maxSurge"))
        r.max_surge = *j;
      else
        ok = false;
    }
    if (const Value* x = field(v, "maxUnavailable")) {
      if (auto j = surge(*x, "serve.rollout.maxUnavailable"))
        r.max_unavailable = *j;
      else
        ok = false;
    }
    auto zero = [](const nlohmann::json& j) {
      return (j.is_number() && j.get<std::int64_t>() == 0) || (j.is_string() && j == "0%");
    };
    if (ok && zero(r.max_surge) && zero(r.max_unavailable)) {
      c_.add(v.origin, "serve.rollout",
             "maxSurge and maxUnavailable cannot both be 0 (the rollout could never progress)");
    }
  }

  void patches(const Value& v, Project& p) {
    if (!c_.map(v, "patches", "{Job: {spec: {...}}}")) return;
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
      const auto& [kind, patch] = v.entries[i];
      const std::string path = join_path("patches", kind);
      if (std::find(kPatchKinds.begin(), kPatchKinds.end(), kind) == kPatchKinds.end()) {
        std::string near = closest_match(kind, kPatchKinds);
        c_.add(v.key_origins[i], path,
               "unknown kind; " + (near.empty() ? "expected one of: " + join(kPatchKinds)
                                                : "did you mean `" + near + "`?"));
        continue;
      }
      if (!c_.map(patch, path, "{spec: {template: {metadata: {annotations: {...}}}}}")) continue;
      p.patches.emplace_back(kind, to_json(patch));
    }
  }

  void cross_checks(const Value& root, const Project& p) {
    if (p.train) {
      const Value& t = *field(root, "train");
      if (const Value* mig = field(t, "mig"); mig && p.train->gpus == 0 && train_ok_) {
        c_.add(mig->origin, "train.mig",
               "needs train.gpus > 0 (the number of MIG slices per node)");
      }
      if (!p.train->shm.empty()) {
        if (auto it = mounts_.find("/dev/shm"); it != mounts_.end()) {
          const Value* shm = field(t, "shm");
          c_.add(shm->origin, "train.shm", "mounts /dev/shm, which " + it->second + " also mounts");
        }
      }
    }
    target_checks(root, p);
    if (p.scheduling.gang == "kueue" && p.scheduling.queue.empty()) {
      if (const Value* s = field(root, "scheduling"))
        if (field(*s, "gang") && !field(*s, "queue"))
          c_.add(field(*s, "gang")->origin, "scheduling.gang",
                 "kueue needs scheduling.queue (the LocalQueue that admits the job)");
    }
    for (std::size_t i = 0; i < p.patches.size(); ++i) {
      const std::string& kind = p.patches[i].first;
      std::string missing;
      // The kind of each target's main object, and the target that renders it.
      static const std::pair<const char*, const char*> kTrainKinds[] = {
          {"Job", "job"},       {"PyTorchJob", "pytorchjob"}, {"TFJob", "tfjob"},
          {"MPIJob", "mpijob"}, {"TrainJob", "trainjob"},     {"JobSet", "jobset"}};
      static const std::pair<const char*, const char*> kServeKinds[] = {
          {"Deployment", "deployment"}, {"InferenceService", "kserve"}, {"LeaderWorkerSet", "lws"}};
      for (const auto& [k, target] : kTrainKinds) {
        if (kind != k) continue;
        if (!field(root, "train"))
          missing = "there is no train section";
        else if (p.train && p.train->target != target)
          missing = "train.target is " + p.train->target;
      }
      for (const auto& [k, target] : kServeKinds) {
        if (kind != k) continue;
        if (!field(root, "serve"))
          missing = "there is no serve section";
        else if (p.serve && p.serve->target != target)
          missing = "serve.target is " + p.serve->target;
      }
      if (kind == "HorizontalPodAutoscaler" && !(p.serve && p.serve->autoscale))
        missing = "there is no serve.autoscale";
      if (kind == "PodGroup" && p.scheduling.gang != "volcano")
        missing = "scheduling.gang is not volcano";
      if (!missing.empty()) {
        const Value& patches_v = *field(root, "patches");
        c_.add(key_origin(patches_v, kind), join_path("patches", kind),
               "nothing to patch: no " + kind + " is rendered (" + missing + ")");
      }
    }
  }

  /// The value at dotted `path` ("train.ttl"), or nullptr.
  static const Value* at_path(const Value& root, const std::string& path) {
    const Value* v = &root;
    std::size_t start = 0;
    while (v && start <= path.size()) {
      const auto dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
      if (v->kind != Kind::kMap) return nullptr;
      v = field(*v, key);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return v;
  }

  /// What the chosen train.target and serve.target cannot express (project/targets.h),
  /// each at the field that asks for it, else at the target.
  void target_checks(const Value& root, const Project& p) {
    for (const auto& limit : target_limits(p)) {
      const Value* at = at_path(root, limit.path);
      if (!at) at = at_path(root, limit.target_path);
      if (!at) at = &root;
      c_.add(at->origin, limit.path, limit.message);
    }
  }

  Checker& c_;
  std::string directory_;
  std::map<std::string, std::string> mounts_;        ///< normalised mount path -> key path
  std::map<std::string, std::string> serve_mounts_;  ///< the same for the serve pod
  bool train_ok_ = true;
  bool serve_ok_ = true;
};

bool has_invalid_utf8(const std::string& s, std::size_t& offset) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xc2)) {
      offset = i;
      return true;
    }
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) {
        offset = i;
        return true;
      }
    }
    i += n;
  }
  return false;
}

void line_col(const std::string& s, std::size_t offset, int& line, int& col) {
  line = 1;
  col = 1;
  for (std::size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
}

std::string what_of(const std::vector<Problem>& problems) {
  std::string out;
  // Appended piece by piece: GCC 12 at -O3 warns (stringop-overflow, a false positive)
  // about the temporary of `"\n" + p.format()`.
  for (const auto& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.format();
  }
  return out;
}

[[noreturn]] void fail_file(const std::string& file, int line, int col, const std::string& msg) {
  throw ProjectError({Problem{file, line, col, "", msg}});
}

}  // namespace

std::string Problem::format() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

ProjectError::ProjectError(std::vector<Problem> problems)
    : UsageError(what_of(problems)), problems_(std::move(problems)) {}

Project parse_project(const std::string& text, const std::string& file,
                      const std::string& directory, const std::vector<std::string>& sets) {
  if (text.find('\0') != std::string::npos) {
    fail_file(file, 0, 0, "not a text file (it contains NUL bytes); expected a YAML project file");
  }
  if (std::size_t offset = 0; has_invalid_utf8(text, offset)) {
    int line = 0, col = 0;
    line_col(text, offset, line, col);
    fail_file(file, line, col, "not valid UTF-8; expected a YAML project file in UTF-8");
  }
  Value root;
  std::vector<TreeProblem> tree_problems;
  Checker c(file);
  auto flush_tree = [&] {
    for (const auto& tp : tree_problems) c.add(tp.origin, tp.path, tp.message);
    tree_problems.clear();
  };
  if (!parse_tree(text, root, tree_problems)) {
    flush_tree();
    throw ProjectError(c.problems);
  }
  if (root.kind == Kind::kNull && sets.empty()) {
    fail_file(file, 0, 0,
              "the file is empty; expected at least `name`, `image` and `train.command` (run "
              "'ktrain init' to write one)");
  }
  if (root.kind != Kind::kMap && root.kind != Kind::kNull) {
    fail_file(file, root.origin.line, root.origin.column,
              "expected a map of keys (name, image, train, ...) at the top level, found " +
                  describe(root));
  }
  if (root.kind == Kind::kNull) {
    root.kind = Kind::kMap;
    root.origin = Origin{1, 1, ""};
  }
  for (const auto& s : sets) apply_set(root, s, kFreeFormMaps, tree_problems);
  flush_tree();

  Project p;
  p.file = file;
  p.directory = directory;
  ProjectParser(c, directory).parse(root, p);
  if (!c.problems.empty()) {
    std::stable_sort(c.problems.begin(), c.problems.end(), [](const Problem& a, const Problem& b) {
      bool a_set = a.line == 0, b_set = b.line == 0;
      if (a_set != b_set) return !a_set;
      if (a_set) return false;
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    throw ProjectError(c.problems);
  }
  return p;
}

Project load_project(Env& env, const std::string& path, const std::vector<std::string>& sets) {
  std::string text;
  std::string directory;
  if (path == "-") {
    if (!env.in) fail_file("-", 0, 0, "no standard input to read the project file from");
    text.assign(std::istreambuf_iterator<char>(*env.in), std::istreambuf_iterator<char>());
    directory = std::filesystem::current_path().string();
  } else {
    if (path.empty()) fail_file("(empty)", 0, 0, "expected a project file path after -f");
    if (env.fs->is_directory(path)) {
      std::string hint = (std::filesystem::path(path) / "ktrain.yaml").string();
      fail_file(path, 0, 0, "is a directory, not a project file; try -f " + hint);
    }
    if (!env.fs->exists(path)) {
      fail_file(path, 0, 0,
                "no such file; create one with 'ktrain init', or name another with -f PATH");
    }
    try {
      text = env.fs->read_file(path);
    } catch (const Error& e) {
      fail_file(path, 0, 0, e.what());
    }
    std::filesystem::path abs = std::filesystem::absolute(path).lexically_normal();
    directory = abs.parent_path().string();
  }
  Project p = parse_project(text, path, directory, sets);
  if (p.launcher.image_from == "default") {
    if (auto e = env.var("KTRAIN_LAUNCHER_IMAGE"); e && !e->empty()) {
      if (std::string problem = image_ref_problem(*e); !problem.empty()) {
        throw UsageError("KTRAIN_LAUNCHER_IMAGE=" + *e + ": " + problem);
      }
      p.launcher.image = *e;
      p.launcher.image_from = "KTRAIN_LAUNCHER_IMAGE";
    }
  }
  return p;
}

}  // namespace ktrain::project
