#include "cmd/diff.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "base/error.h"
#include "cmd/built_image.h"
#include "cmd/project_flags.h"
#include "cmd/run_common.h"
#include "kube/client.h"
#include "kube/connection.h"
#include "render/render.h"
#include "render/yaml_json.h"

namespace ktrain::cmd {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// The longest common subsequence's table, for inputs of a manifest's size.
constexpr std::size_t kMaxDiffLines = 20000;

struct Edit {
  char op;  // ' ', '-', '+'
  std::string line;
};

std::vector<Edit> edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // Common head and tail first: most changes are small.
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Edit> out;
  for (std::size_t i = 0; i < head; ++i) out.push_back({' ', a[i]});
  const std::size_t n = a.size() - head - tail, m = b.size() - head - tail;
  if (n * m > kMaxDiffLines * 50) {
    // Too large to align: all of it replaced.
    for (std::size_t i = 0; i < n; ++i) out.push_back({'-', a[head + i]});
    for (std::size_t j = 0; j < m; ++j) out.push_back({'+', b[head + j]});
  } else {
    std::vector<std::vector<std::uint32_t>> l(n + 1, std::vector<std::uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;) {
      for (std::size_t j = m; j-- > 0;) {
        l[i][j] =
            a[head + i] == b[head + j] ? l[i + 1][j + 1] + 1 : std::max(l[i + 1][j], l[i][j + 1]);
      }
    }
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        out.push_back({' ', a[head + i]});
        ++i;
        ++j;
      } else if (i < n && (j == m || l[i + 1][j] >= l[i][j + 1])) {
        out.push_back({'-', a[head + i]});  // what goes, before what comes
        ++i;
      } else {
        out.push_back({'+', b[head + j]});
        ++j;
      }
    }
  }
  for (std::size_t i = a.size() - tail; i < a.size(); ++i) out.push_back({' ', a[i]});
  return out;
}

/// "metadata:\n  name: x" of `obj` as YAML lines ("" when null).
std::vector<std::string> yaml_lines(const nlohmann::json& obj) {
  if (obj.is_null()) return {};
  return lines_of(render::to_yaml({nlohmann::ordered_json(obj)}));
}

std::string object_name(const nlohmann::ordered_json& o) {
  const auto& md = o.contains("metadata") ? o["metadata"] : nlohmann::ordered_json::object();
  return o.value("kind", "") + "/" + md.value("name", "");
}

}  // namespace

std::string unified_diff(const std::vector<std::string>& before,
                         const std::vector<std::string>& after, const std::string& from,
                         const std::string& to) {
  if (before == after) return "";
  const std::vector<Edit> e = edits(before, after);
  constexpr std::size_t kContext = 3;
  std::string out = "--- " + from + "\n+++ " + to + "\n";
  std::size_t k = 0;
  while (k < e.size()) {
    // The next change, and its hunk: changes closer than 2*context join.
    while (k < e.size() && e[k].op == ' ') ++k;
    if (k == e.size()) break;
    std::size_t start = k >= kContext ? k - kContext : 0;
    std::size_t end = k;
    while (end < e.size()) {
      if (e[end].op != ' ') {
        ++end;
        continue;
      }
      std::size_t run = end;
      while (run < e.size() && e[run].op == ' ') ++run;
      if (run == e.size() || run - end > 2 * kContext) {
        end = std::min(e.size(), end + kContext);
        break;
      }
      end = run;
    }
    // Line numbers of the hunk in both.
    std::size_t a_line = 1, b_line = 1;
    for (std::size_t i = 0; i < start; ++i) {
      if (e[i].op != '+') ++a_line;
      if (e[i].op != '-') ++b_line;
    }
    std::size_t a_n = 0, b_n = 0;
    for (std::size_t i = start; i < end; ++i) {
      if (e[i].op != '+') ++a_n;
      if (e[i].op != '-') ++b_n;
    }
    out += "@@ -" + std::to_string(a_n ? a_line : a_line - 1) + "," + std::to_string(a_n) + " +" +
           std::to_string(b_n ? b_line : b_line - 1) + "," + std::to_string(b_n) + " @@\n";
    for (std::size_t i = start; i < end; ++i) out += std::string(1, e[i].op) + e[i].line + "\n";
    k = end;
  }
  return out;
}

nlohmann::json comparable(nlohmann::json obj) {
  if (!obj.is_object()) return obj;
  obj.erase("status");
  if (auto md = obj.find("metadata"); md != obj.end() && md->is_object()) {
    for (const char* k :
         {"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"}) {
      md->erase(k);
    }
  }
  if (obj.value("kind", "") == "Secret") {
    for (const char* k : {"data", "stringData"}) {
      if (auto d = obj.find(k); d != obj.end() && d->is_object()) {
        for (auto& [key, v] : d->items()) v = "***";
      }
    }
  }
  return obj;
}

namespace {

/// `obj` applied with a server-side dry run; exit 2 naming it when the server refuses.
nlohmann::json dry_run_one(kube::Client& client, const nlohmann::ordered_json& obj) {
  kube::ApplyOptions opts;
  opts.dry_run = true;
  try {
    return client.apply(obj, client.default_namespace(), opts);
  } catch (const kube::ApiError& e) {
    throw Error("the API server refuses " + object_name(obj) + ": " + e.what(), exit_code::kUsage);
  }
}

std::string resource_version(const nlohmann::json& obj) {
  const auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  return md->value("resourceVersion", "");
}

}  // namespace

std::vector<nlohmann::json> server_dry_run(kube::Client& client,
                                           const std::vector<nlohmann::ordered_json>& objects) {
  std::vector<nlohmann::json> out;
  for (const auto& obj : objects) out.push_back(dry_run_one(client, obj));
  return out;
}

namespace {

struct DiffOptions {
  ProjectFlags project_flags;
  std::string run_id;

  int run(Env& env) const {
    project::Project p = project_flags.load(env);
    use_built_image(env, p, false);
    render::RenderOptions ro;
    ro.run_id = run_id;
    ro.fs = env.fs;
    render::Rendered r = render::render_project(p, ro);
    for (const auto& w : r.warnings) env.warn(w);
    if (!cluster_configured(env)) {
      throw Error(
          "ktrain diff compares with a cluster, and none is configured (no --kubeconfig, "
          "$KUBECONFIG or ~/.kube/config)",
          exit_code::kUnreachable);
    }
    kube::Connection connection(env);
    kube::Client& client = connection.client();
    const std::string ns = client.default_namespace();
    bool different = false;
    const bool colour = env.out_is_terminal && env.color();
    for (std::size_t i = 0; i < r.objects.size(); ++i) {
      const auto& obj = r.objects[i];
      const std::string kind = obj.value("kind", "");
      const auto type = kube::resource_type(obj.value("apiVersion", ""), kind);
      std::string obj_ns = ns;
      if (obj.contains("metadata") && obj["metadata"].contains("namespace")) {
        obj_ns = obj["metadata"]["namespace"].get<std::string>();
      }
      const std::string name = obj["metadata"].value("name", "");
      // The live object the dry run merged with: a controller that wrote to it between
      // the two (a Deployment's revision) would show as a difference, so both are read
      // again until they are of the same version.
      nlohmann::json merged;
      std::optional<nlohmann::json> live;
      for (int attempt = 0; attempt < 5; ++attempt) {
        merged = dry_run_one(client, obj);
        live = client.get_if_exists(kube::object_path(type, obj_ns, name));
        if (!live || resource_version(*live) == resource_version(merged)) break;
      }
      const std::string what = type.api_version + " " + kind + " " + obj_ns + "/" + name;
      const std::string d = unified_diff(yaml_lines(live ? comparable(*live) : nlohmann::json()),
                                         yaml_lines(comparable(merged)), "live " + what,
                                         "ktrain " + what + (live ? "" : " (new)"));
      if (d.empty()) continue;
      different = true;
      if (!colour) {
        *env.out << d;
        continue;
      }
      for (const auto& l : lines_of(d)) {
        const char* c = l.rfind("---", 0) == 0 || l.rfind("+++", 0) == 0 ? "\033[1m"
                        : l.rfind("@@", 0) == 0                          ? "\033[36m"
                        : !l.empty() && l[0] == '-'                      ? "\033[31m"
                        : !l.empty() && l[0] == '+'                      ? "\033[32m"
                                                                         : "";
        *env.out << c << l << (*c ? "\033[0m" : "") << "\n";
      }
    }
    env.out->flush();
    if (!different && !env.global.quiet) {
      *env.err << "ktrain: no difference: applying the project changes nothing\n";
    }
    return different ? exit_code::kFailed : exit_code::kOk;
  }
};

}  // namespace

void add_diff_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<DiffOptions>();
  auto* sub = app.add_subcommand(
      "diff",
      "Show what applying the project would change on the cluster (a server-side dry run "
      "of each object against the live one, as kubectl diff); exit 1 when something would");
  opts->project_flags.add_to(*sub);
  sub->add_option("--run-id", opts->run_id,
                  "Compare the run with this id (default: the stable id render uses)");
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
