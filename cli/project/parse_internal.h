#pragma once
// The parser of ktrain.yaml, shared by its files (one a section: parse_image.cc,
// parse_train.cc, parse_serve.cc, parse_scheduling.cc, parse_security.cc; parse.cc
// holds the top level and the checks across sections): the key lists, the Checker
// that reports problems at their origin, and the ProjectParser that fills a Project.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <istream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/cuda.h"
#include "base/duration.h"
#include "base/image_ref.h"
#include "base/names.h"
#include "base/quantity.h"
#include "base/suggest.h"
#include "base/text.h"
#include "project/parse.h"
#include "project/schema_table.h"
#include "project/targets.h"
#include "project/tree.h"

namespace ktrain::project::detail {

using Kind = Value::Kind;
using Keys = std::vector<std::string>;

// The key lists and enumerations come from the table that the JSON Schema is also
// generated from (project/schema_table.h).
inline const Keys kTopKeys = key_names("project");
inline const Keys kLauncherKeys = key_names("launcher");
inline const Keys kInjects = project_key("launcher", "inject").values;
inline const Keys kImageKeys = key_names("image");
inline const Keys kBuildKeys = key_names("build");
inline const Keys kTrainKeys = key_names("train");
inline const Keys kVolumeKeys = key_names("volume");
inline const Keys kRetryKeys = key_names("retry");
inline const Keys kWatchdogKeys = key_names("watchdog");
inline const Keys kNotifyKeys = key_names("notify");
inline const Keys kRetryActions = project_key("retry", "action").values;
inline const Keys kSchedulingKeys = key_names("scheduling");
inline const Keys kTolerationKeys = key_names("toleration");
inline const Keys kOperators = project_key("toleration", "operator").values;
inline const Keys kSecurityKeys = key_names("security");
inline const Keys kServeKeys = key_names("serve");
inline const Keys kAutoscaleKeys = key_names("autoscale");
inline const Keys kMetricKeys = key_names("metric");
inline const Keys kProbeKeys = key_names("probe");
inline const Keys kRolloutKeys = key_names("rollout");
inline const Keys kPatchKinds = project_key("project", "patches").values;

inline const Keys kModelKeys = key_names("model");
inline const Keys kTrainTargets = project_key("train", "target").values;
inline const Keys kServeTargets = project_key("serve", "target").values;
inline const Keys kServeRuntimes = project_key("serve", "runtime").values;

inline const Keys kFrameworks = project_key("train", "framework").values;
inline const Keys kPreflights = project_key("train", "preflight").values;
inline const Keys kGangs = project_key("scheduling", "gang").values;
inline const Keys kEffects = project_key("toleration", "effect").values;

/// Maps whose keys are free-form (the rest of a --set path is one key).
inline const Keys kFreeFormMaps = free_form_map_paths();

/// Every known key path, for suggestions across sections (`gpus` -> `train.gpus`).
inline const std::vector<std::pair<std::string, Keys>>& sections() {
  static const auto s = [] {
    std::vector<std::pair<std::string, Keys>> out;
    for (const auto& [path, section] : section_paths())
      out.emplace_back(path, key_names(section->name));
    return out;
  }();
  return s;
}

inline std::string join(const Keys& keys, const std::string& sep = ", ") {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : sep) + k;
  return out;
}

inline const char* const kNameRule =
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
            if (ascii_lower(k) == ascii_lower(key)) {
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
    return dns_name(v, path, max, example, is_dns1123_label,
                    std::string("a DNS-1123 label (") + kNameRule + ")");
  }

  std::optional<std::string> dns_subdomain(const Value& v, const std::string& path, std::size_t max,
                                           const std::string& example) {
    return dns_name(v, path, max, example, is_dns1123_subdomain,
                    std::string("a DNS-1123 name (") + kNameRule + ", and '.')");
  }

  std::optional<std::string> domain_path(const Value& v, const std::string& path, std::size_t max,
                                         const std::string& example) {
    return dns_name(v, path, max, example, is_domain_path,
                    "a domain-prefixed path (a DNS-1123 name, '/', then URL path characters)");
  }

  /// A name of at most `max` characters that `valid` accepts (`what` says which rule).
  std::optional<std::string> dns_name(const Value& v, const std::string& path, std::size_t max,
                                      const std::string& example, bool (*valid)(std::string_view),
                                      const std::string& what) {
    auto s = scalar(v, path, "a name like " + example);
    if (!s) return std::nullopt;
    if (s->size() > max) {
      expected(v, path,
               "a name of at most " + std::to_string(max) + " characters (it has " +
                   std::to_string(s->size()) + ")");
      return std::nullopt;
    }
    if (!valid(*s)) {
      expected(v, path, what + " like " + example);
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
inline const Value* field(const Value& v, const std::string& key) {
  const Value* f = v.find(key);
  if (!f || f->kind == Kind::kNull) return nullptr;
  return f;
}

inline const Origin& key_origin(const Value& map, const std::string& key) {
  for (std::size_t i = 0; i < map.entries.size(); ++i)
    if (map.entries[i].first == key) return map.key_origins[i];
  return map.origin;
}

inline nlohmann::ordered_json to_json(const Value& v) {
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

/// Fills a Project from the tree, section by section; each method is defined in the
/// file of its section.
class ProjectParser {
 public:
  ProjectParser(Checker& c, const std::string& directory) : c_(c), directory_(directory) {}

  /// The whole file (parse.cc), then the checks across sections.
  void parse(const Value& root, Project& p);

 private:
  // parse_image.cc
  void image(const Value& v, Image& out);
  void build(const Value& v, ImageBuild& out);

  // parse_train.cc
  void train(const Value& v, Train& t);
  static bool is_mig_profile(const std::string& s);
  std::vector<std::string> command(const Value& v, const std::string& path);
  void env_from(const Value& v, const std::string& path, std::vector<EnvFrom>& out);
  void gpu_type(const Value& x, const std::string& path, std::string& out);
  void cuda(const Value& x, const std::string& path, std::string& out);
  /// `path` (train.volumes or serve.volumes) into `out`; `mounts` holds the mount
  /// paths taken so far in that pod.
  void volumes(const Value& v, const std::string& path, std::vector<Volume>& out,
               std::map<std::string, std::string>& mounts);
  void sweep(const Value& v, Train& t);
  void retry(const Value& v, Train& t);
  void placeholders(const Value& v, const Train& t);

  // parse_scheduling.cc
  void scheduling(const Value& v, Scheduling& s);
  void tolerations(const Value& v, std::vector<Toleration>& out);
  static std::optional<Toleration> short_toleration(const std::string& s);

  // parse_security.cc
  void launcher(const Value& v, Launcher& l);
  void security(const Value& v, Security& s);

  // parse_serve.cc
  void serve(const Value& v, Serve& s);
  void model(const Value& v, Serve& s);
  void autoscale(const Value& v, Autoscale& a);
  std::optional<Probe> probe(const Value& v, const std::string& p);
  std::optional<nlohmann::json> surge(const Value& v, const std::string& p);
  void rollout(const Value& v, Rollout& r);

  // parse.cc
  void patches(const Value& v, Project& p);
  void cross_checks(const Value& root, const Project& p);
  /// The value at dotted `path` ("train.ttl"), or nullptr.
  static const Value* at_path(const Value& root, const std::string& path);
  /// What the chosen train.target and serve.target cannot express (project/targets.h),
  /// each at the field that asks for it, else at the target.
  void target_checks(const Value& root, const Project& p);

  Checker& c_;
  std::string directory_;
  std::map<std::string, std::string> mounts_;        ///< normalised mount path -> key path
  std::map<std::string, std::string> serve_mounts_;  ///< the same for the serve pod
  bool train_ok_ = true;
  bool serve_ok_ = true;
};

}  // namespace ktrain::project::detail
