#include "project/parse.h"

#include "project/parse_internal.h"

namespace ktrain::project {

namespace detail {

void ProjectParser::parse(const Value& root, Project& p) {
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

void ProjectParser::patches(const Value& v, Project& p) {
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

void ProjectParser::cross_checks(const Value& root, const Project& p) {
  if (p.train) {
    const Value& t = *field(root, "train");
    if (const Value* mig = field(t, "mig"); mig && p.train->gpus == 0 && train_ok_) {
      c_.add(mig->origin, "train.mig", "needs train.gpus > 0 (the number of MIG slices per node)");
    }
    if (const Value* sync = field(t, "sync"); sync && p.train->sync && !p.image.build) {
      c_.add(sync->origin, "train.sync",
             "puts the workspace on the image that ktrain build makes: set image.build (base "
             "and repository)");
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
  if (p.scheduling.managed_by == "kueue.x-k8s.io/multikueue" && p.scheduling.queue.empty()) {
    if (const Value* s = field(root, "scheduling"))
      if (const Value* m = field(*s, "managedBy"))
        c_.add(m->origin, "scheduling.managedBy",
               "MultiKueue dispatches only what a Kueue queue admits: set scheduling.queue "
               "(a LocalQueue whose ClusterQueue has the MultiKueue admission check)");
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

const Value* ProjectParser::at_path(const Value& root, const std::string& path) {
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

void ProjectParser::target_checks(const Value& root, const Project& p) {
  for (const auto& limit : target_limits(p)) {
    const Value* at = at_path(root, limit.path);
    if (!at) at = at_path(root, limit.target_path);
    if (!at) at = &root;
    c_.add(at->origin, limit.path, limit.message);
  }
}

}  // namespace detail

namespace {

using detail::Checker;
using detail::kFreeFormMaps;
using detail::Kind;
using detail::ProjectParser;

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
