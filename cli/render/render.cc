#include "render/render.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "base/env.h"
#include "base/error.h"
#include "base/image_ref.h"
#include "base/names.h"
#include "render/merge_patch.h"
#include "render/targets/targets.h"
#include "render/templates.h"
#include "render/workloads.h"

namespace ktrain::render {

namespace {

using nlohmann::ordered_json;

/// The embedded skeleton `file`, parsed the first time it is needed (a run needs two or
/// three of the six) from the JSON it was converted to at build time: parsing YAML
/// would be most of what a render costs.
const ordered_json* embedded_parsed(const std::string& file) {
  static std::mutex mu;
  static std::map<std::string, ordered_json> parsed;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = parsed.find(file); it != parsed.end()) return &it->second;
  for (const auto& t : embedded_templates()) {
    if (t.name != file) continue;
    return &(parsed[file] = ordered_json::parse(t.json));
  }
  return nullptr;
}

/// Loads skeletons from the embedded set or from --templates DIR (each file once).
class TemplateSource {
 public:
  explicit TemplateSource(const RenderOptions& options)
      : dir_(options.templates_dir), fs_(options.fs) {
    if (!dir_.empty() && fs_ == nullptr) fs_ = &real_fs_;
  }

  ordered_json load(const std::string& file) {
    if (dir_.empty()) {
      const ordered_json* t = embedded_parsed(file);
      if (!t) throw Error("no embedded template " + file + " (a build problem)");
      return *t;
    }
    auto it = cache_.find(file);
    if (it != cache_.end()) return it->second;
    const std::string path = dir_ + "/" + file;
    if (!fs_->exists(path)) {
      throw UsageError("--templates " + dir_ + ": there is no " + file +
                       " (the folder must hold the same file names as templates/: job.yaml, "
                       "service-headless.yaml, podgroup.yaml, deployment.yaml, service.yaml, "
                       "hpa.yaml, pdb.yaml, and for other targets pytorchjob.yaml, "
                       "tfjob.yaml, mpijob.yaml, trainjob.yaml, jobset.yaml, "
                       "inferenceservice.yaml, leaderworkerset.yaml)");
    }
    ordered_json parsed = parse_yaml_document(fs_->read_file(path), path);
    if (!parsed.is_object()) {
      throw UsageError(path + ": a template must be a YAML mapping (a Kubernetes object)");
    }
    cache_[file] = parsed;
    return parsed;
  }

 private:
  std::string dir_;
  FileSystem* fs_;
  RealFileSystem real_fs_;
  std::map<std::string, ordered_json> cache_;
};

/// FNV-1a over the content of rendered objects: keys in their order, values with
/// their types, walked in place (no text is made of them).
class ContentHash {
 public:
  void add(const ordered_json& v) {
    switch (v.type()) {
      case ordered_json::value_t::object:
        byte('{');
        for (auto it = v.begin(); it != v.end(); ++it) {
          bytes(it.key());
          byte(0);
          add(it.value());
        }
        byte('}');
        break;
      case ordered_json::value_t::array:
        byte('[');
        for (const auto& x : v) add(x);
        byte(']');
        break;
      case ordered_json::value_t::string:
        byte('"');
        bytes(v.get_ref<const std::string&>());
        byte(0);
        break;
      case ordered_json::value_t::boolean:
        byte(v.get<bool>() ? 't' : 'f');
        break;
      case ordered_json::value_t::null:
      case ordered_json::value_t::discarded:
        byte('n');
        break;
      default:  // numbers: as JSON writes them
        byte('#');
        bytes(v.dump());
        byte(0);
        break;
    }
  }
  std::uint64_t value() const { return h_; }

 private:
  void byte(unsigned char c) {
    h_ ^= c;
    h_ *= 1099511628211ULL;
  }
  void bytes(const std::string& s) {
    for (char c : s) byte(static_cast<unsigned char>(c));
  }
  std::uint64_t h_ = 1469598103934665603ULL;
};

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace

std::string run_name(const project::Project& project, const std::string& run_id) {
  return project.name + "-" + run_id;
}

std::vector<std::string> run_names(const project::Project& project, const std::string& run_id) {
  const std::string base = run_name(project, run_id);
  if (!project.train) return {base};
  std::vector<std::string> names;
  for (const auto& point : project::sweep_points(*project.train)) {
    names.push_back(project::sweep_run_name(base, point));
  }
  return names;
}

std::string run_id_from(std::uint64_t entropy) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id;
  for (int i = 0; i < 5; ++i) {
    id += kAlphabet[entropy % 36];
    entropy /= 36;
  }
  return id;
}

std::string default_run_id(const project::Project& project, const RenderOptions& options) {
  RenderOptions probe = options;
  probe.run_id = "00000";  // same length as a real id, so the same names validate
  probe.strict = false;
  ContentHash h;
  render_each(project, probe, [&h](ordered_json&& o) { h.add(o); });
  return run_id_from(h.value());
}

void validate_run_id(const project::Project& project, const std::string& run_id) {
  if (!is_dns1123_label(run_id)) {
    throw UsageError("--run-id '" + run_id +
                     "': a run id must be lower-case letters, digits and '-', starting and "
                     "ending with a letter or digit (e.g. 7f3k2)");
  }
  if (!project.train) return;
  // The longest pod host name: <run>[-<k>]-<rank> for a Job, <run>-node-0-<rank> for a
  // JobSet, <run>-worker-<index> for the Training Operator's jobs.
  std::string longest = run_name(project, run_id);
  if (!project.train->sweep.empty()) {
    longest += "-" + std::to_string(project::sweep_points(*project.train).size() - 1);
  }
  longest += targets::train_target(project.train->target).host_infix +
             std::to_string(project.train->nodes - 1);
  if (longest.size() > 63) {
    throw UsageError("--run-id '" + run_id + "' is too long: pod host names such as '" + longest +
                     "' would exceed 63 characters");
  }
}

std::string multiply_quantity(const std::string& quantity, int n) {
  // (digits[.digits] | .digits) then a suffix: one of n u m k M G T P E, a binary
  // Ki..Ei, or an exponent e3 / E-2.
  std::size_t cut = 0;
  while (cut < quantity.size() &&
         (std::isdigit(static_cast<unsigned char>(quantity[cut])) || quantity[cut] == '.')) {
    ++cut;
  }
  const std::string mantissa = quantity.substr(0, cut);
  const std::string suffix = quantity.substr(cut);
  const bool mantissa_ok = std::count(mantissa.begin(), mantissa.end(), '.') <= 1 &&
                           std::any_of(mantissa.begin(), mantissa.end(), [](char c) {
                             return std::isdigit(static_cast<unsigned char>(c)) != 0;
                           });
  auto suffix_ok = [&suffix] {
    if (suffix.empty()) return true;
    if (suffix.size() == 1)
      return std::string_view("numkMGTPE").find(suffix[0]) != std::string_view::npos;
    if (suffix.size() == 2 && suffix[1] == 'i') {
      return std::string_view("KMGTPE").find(suffix[0]) != std::string_view::npos;
    }
    if (suffix[0] != 'e' && suffix[0] != 'E') return false;
    std::size_t i = 1;
    if (suffix[i] == '-' || suffix[i] == '+') ++i;
    if (i >= suffix.size()) return false;
    for (; i < suffix.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[i]))) return false;
    }
    return true;
  };
  if (!mantissa_ok || !suffix_ok() || n < 0) {
    throw Error("'" + quantity + "' is not a Kubernetes quantity (e.g. 500m, 2, 64Gi)");
  }
  std::string digits;
  std::size_t frac = 0;
  bool after_point = false;
  for (char c : mantissa) {
    if (c == '.') {
      after_point = true;
    } else {
      digits += c;
      if (after_point) ++frac;
    }
  }
  if (digits.size() > 15) throw Error("quantity '" + quantity + "' has too many digits");
  std::uint64_t value = std::stoull(digits) * static_cast<std::uint64_t>(n);
  std::string s = std::to_string(value);
  if (frac > 0) {
    if (s.size() <= frac) s.insert(0, frac - s.size() + 1, '0');
    s.insert(s.size() - frac, ".");
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s + suffix;
}

std::string image_pin_problem(const std::string& ref) {
  if (ref.find('@') != std::string::npos) return "";  // pinned by digest
  const auto slash = ref.rfind('/');
  const std::string last = slash == std::string::npos ? ref : ref.substr(slash + 1);
  const auto colon = last.find(':');
  if (colon == std::string::npos) {
    return "image '" + ref + "' has no tag: pin a version (e.g. " + ref +
           ":1.0) or a digest (@sha256:...) so that every node runs the same code";
  }
  if (last.substr(colon + 1) == "latest") {
    return "image '" + ref +
           "' uses the tag 'latest', which moves: pin a version or a digest "
           "(@sha256:...) so that every node runs the same code";
  }
  return "";
}

namespace {

struct Identity {
  std::string api_version, kind, name;
};

Identity identity(const ordered_json& o) {
  auto str = [](const ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  const ordered_json none;
  const auto& md = o.contains("metadata") ? o["metadata"] : none;
  return {o.contains("apiVersion") ? str(o["apiVersion"]) : "",
          o.contains("kind") ? str(o["kind"]) : "",
          md.is_object() && md.contains("name") ? str(md["name"]) : ""};
}

bool has_key(const ordered_json& j, const std::string& key) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == key || has_key(it.value(), key)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& e : j) {
      if (has_key(e, key)) return true;
    }
  }
  return false;
}

/// What an object must still be after the project's patches: the same apiVersion, kind
/// and name; every container with a name and an image; the training container started
/// by ktrain-launch, unless a patch set a command on purpose. A merge patch replaces
/// lists whole, so a patch of `containers` easily drops the image or the launcher.
void check_patched(const project::Project& project, const std::string& kind, const Identity& before,
                   const ordered_json& o, bool sets_command, bool injected) {
  auto refuse = [&](const std::string& path, const std::string& what) {
    throw UsageError(project.file + ": patches." + kind + ": " + path + ": " + what);
  };
  const Identity after = identity(o);
  if (after.api_version != before.api_version) {
    refuse("apiVersion", "a patch may not change it (" + before.api_version + ")");
  }
  if (after.kind != before.kind) refuse("kind", "a patch may not change it (" + before.kind + ")");
  if (after.name != before.name) {
    refuse("metadata.name", "a patch may not change it (" + before.name + ")");
  }
  if (kind != "Job" && kind != "Deployment") return;
  const char* pod_path = "spec.template.spec";
  const ordered_json* pod = nullptr;
  if (o.contains("spec") && o["spec"].is_object() && o["spec"].contains("template") &&
      o["spec"]["template"].is_object() && o["spec"]["template"].contains("spec")) {
    pod = &o["spec"]["template"]["spec"];
  }
  if (!pod || !pod->is_object()) refuse(pod_path, "the patched object has no pod spec");
  if (!pod->contains("containers") || !(*pod)["containers"].is_array() ||
      (*pod)["containers"].empty()) {
    refuse(std::string(pod_path) + ".containers", "the patched object has no containers");
  }
  const std::string main = kind == "Job" ? "train" : "serve";
  bool found_main = false;
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod->contains(list) || !(*pod)[list].is_array()) continue;
    const auto& cs = (*pod)[list];
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const std::string at = std::string(pod_path) + "." + list + "[" + std::to_string(i) + "]";
      const auto& c = cs[i];
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string() ||
          c["name"].get<std::string>().empty()) {
        refuse(at + ".name",
               "every container needs a name (a merge patch replaces the "
               "containers list whole: give each container in full)");
      }
      if (!c.contains("image") || !c["image"].is_string() ||
          c["image"].get<std::string>().empty()) {
        refuse(at + ".image", "container \"" + c["name"].get<std::string>() +
                                  "\" has no image (a merge patch replaces the containers "
                                  "list whole: give each container in full)");
      }
      if (std::string(list) != "containers" || c["name"] != main) continue;
      found_main = true;
      if (kind == "Job" && !sets_command) {
        const bool launched = c.contains("command") && c["command"].is_array() &&
                              !c["command"].empty() &&
                              c["command"][0] == "/opt/ktrain/bin/ktrain-launch";
        if (!launched) {
          refuse(at + ".command",
                 "the patch drops ktrain-launch from the training container; set command in "
                 "the patch to replace it on purpose");
        }
      }
    }
  }
  if (kind == "Job" && injected && !sets_command) {
    bool kept = false;
    if (pod->contains("initContainers") && (*pod)["initContainers"].is_array()) {
      for (const auto& c : (*pod)["initContainers"]) {
        kept = kept || (c.is_object() && c.value("name", "") == kLauncherContainer);
      }
    }
    if (!kept) {
      refuse(std::string(pod_path) + ".initContainers",
             "the patch drops the init container ktrain-launcher, which copies ktrain-launch "
             "into this image (a merge patch replaces the list whole): list it too (see "
             "'ktrain render'), or set launcher.inject: never if the image has "
             "/opt/ktrain/bin/ktrain-launch");
    }
  }
  if (!found_main) {
    refuse(std::string(pod_path) + ".containers", "no container named \"" + main +
                                                      "\" is left (ktrain's status, logs and exit "
                                                      "codes follow it)");
  }
}

}  // namespace

std::string image_to_run(const project::Project& project, const RenderOptions& options) {
  std::string image = options.image.empty() ? project.image.ref : options.image;
  if (image.empty() && project.image.build) image = project.image.build->repository;
  if (image.empty()) {
    throw UsageError("image: nothing to run: set image (or image.ref), or image.build");
  }
  return image;
}

LauncherPlan launcher_plan(const project::Project& project, const std::string& image) {
  using Inject = project::Launcher::Inject;
  const auto& l = project.launcher;
  LauncherPlan plan;
  if (l.inject == Inject::kNever) {
    plan.reason = "in the image at " + std::string(kLauncherDir) + " (launcher.inject: never)";
    return plan;
  }
  if (l.inject == Inject::kAuto && project.image.build) {
    const ImageRef run = parse_image_ref(image);
    const ImageRef built = parse_image_ref(project.image.build->repository);
    if (run.name() == built.name()) {
      plan.reason = "in the image (ktrain build puts it there: image.build)";
      return plan;
    }
  }
  plan.inject = true;
  plan.image = l.image;
  const std::string from = l.image_from == "default" ? "ktrain's default" : l.image_from;
  plan.reason = "injected by an init container from " + l.image + " (" + from +
                (l.inject == Inject::kAlways ? "; launcher.inject: always" : "") + ")";
  return plan;
}

std::vector<std::string> render_each(const project::Project& project, const RenderOptions& options,
                                     const std::function<void(ordered_json&&)>& each) {
  std::vector<std::string> warnings;
  const std::string id = options.run_id.empty() ? default_run_id(project, options) : options.run_id;
  validate_run_id(project, id);

  const std::string image = image_to_run(project, options);
  if (auto problem = image_pin_problem(image); !problem.empty()) warnings.push_back(problem);

  if (!project.train && !project.serve) {
    throw UsageError(project.file + ": nothing to render: the project has neither train nor serve");
  }

  TemplateSource templates(options);
  detail::RenderContext ctx{project,
                            [&templates](const std::string& f) { return templates.load(f); },
                            image,
                            &warnings,
                            launcher_plan(project, image),
                            &options.started,
                            options.kube_version};

  // Each object is finished (nulls pruned, patches applied) and handed over before the
  // next run is rendered.
  std::vector<std::string> kinds;  // rendered, in order of first appearance
  std::set<std::string> patched;   // patch kinds that matched an object
  auto finish = [&](ordered_json&& o) {
    detail::prune_nulls(o);
    const std::string k = o.value("kind", "");
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    const Identity before = identity(o);
    bool any = false, sets_command = false;
    for (const auto& [kind, patch] : project.patches) {
      if (kind != k) continue;
      apply_merge_patch(o, patch);
      patched.insert(kind);
      any = true;
      sets_command = sets_command || has_key(patch, "command");
    }
    if (any) check_patched(project, k, before, o, sets_command, ctx.launcher.inject);
    each(std::move(o));
  };

  if (project.train) {
    const auto& s = project.scheduling;
    if (s.gang == "kueue" && s.queue.empty()) {
      warnings.push_back(
          "scheduling.gang is kueue but scheduling.queue is empty: Kueue admits only Jobs "
          "that name a LocalQueue (queue: NAME)");
    }
    const auto& train = targets::train_target(project.train->target);
    const std::string base = run_name(project, id);
    for (const auto& point : project::sweep_points(*project.train)) {
      const std::string run = project::sweep_run_name(base, point);
      const std::string sweep = point.index >= 0 ? base : "";
      for (auto& o : train.render(ctx, run, sweep, point)) finish(std::move(o));
    }
  }
  if (project.serve) {
    for (auto& o : targets::serve_target(project.serve->target).render(ctx)) {
      finish(std::move(o));
    }
  }

  for (const auto& [kind, patch] : project.patches) {
    if (!patched.count(kind)) {
      warnings.push_back("patches." + kind +
                         " matches no rendered object (rendered kinds: " + join(kinds, ", ") + ")");
    }
  }

  if (options.strict && !warnings.empty()) {
    throw UsageError("--strict: " + join(warnings, "; "));
  }
  return warnings;
}

Rendered render_project(const project::Project& project, const RenderOptions& options) {
  Rendered r;
  r.warnings =
      render_each(project, options, [&r](ordered_json&& o) { r.objects.push_back(std::move(o)); });
  return r;
}

}  // namespace ktrain::render
