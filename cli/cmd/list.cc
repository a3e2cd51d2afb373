#include "cmd/list.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <ostream>
#include <set>

#include <fmt/format.h>

#include "backend/run_id.h"
#include "base/error.h"
#include "base/selector.h"
#include "base/text.h"
#include "base/timefmt.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

/// The states --state takes, as `list` shows them.
const std::vector<backend::RunState> kStates = {
    backend::RunState::kPending, backend::RunState::kRunning, backend::RunState::kSucceeded,
    backend::RunState::kFailed, backend::RunState::kStopped};

/// The runs, newest first, with the runs of a sweep together where its newest run is,
/// in index order (NAME-2 before NAME-10).
std::vector<backend::RunSummary> grouped(std::vector<backend::RunSummary> runs) {
  std::map<std::string, std::vector<backend::RunSummary>> sweeps;
  std::vector<backend::RunSummary> out;
  std::vector<std::string> order;  // "" for a run by itself, else its sweep
  std::vector<backend::RunSummary> singles;
  for (auto& r : runs) {
    const std::string key = r.sweep.empty() ? "" : r.namespace_ + "/" + r.sweep;
    if (key.empty()) {
      order.push_back("");
      singles.push_back(std::move(r));
      continue;
    }
    if (!sweeps.count(key)) order.push_back(key);
    sweeps[key].push_back(std::move(r));
  }
  size_t single = 0;
  for (const auto& key : order) {
    if (key.empty()) {
      out.push_back(std::move(singles[single++]));
      continue;
    }
    auto& group = sweeps[key];
    std::sort(group.begin(), group.end(), [](const auto& a, const auto& b) {
      return backend::before_in_sweep(a.name, b.name);
    });
    for (auto& r : group) out.push_back(std::move(r));
  }
  return out;
}

struct ListOptions {
  TargetFlags target;
  bool all_namespaces = false;
  std::string selector;
  std::vector<std::string> states;
  std::string sweep;
  bool watch = false;

  int run(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "yaml" && o != "name") {
      throw UsageError("-o " + o + ": list prints table, wide, json, yaml or name");
    }
    backend::ListFilter filter;
    filter.all_namespaces = all_namespaces;
    std::string problem;
    auto sel = parse_label_selector(selector, &problem);
    if (!sel) throw UsageError("-l " + selector + ": " + problem);
    filter.selector = std::move(*sel);
    filter.sweep = sweep;
    std::set<backend::RunState> wanted;
    for (const auto& list : states) {
      std::string word;
      for (char c : list + ",") {
        if (c != ',') {
          word += c;
          continue;
        }
        if (word.empty()) continue;
        bool known = false;
        for (auto st : kStates) {
          if (ascii_lower(word) == ascii_lower(backend::to_string(st))) {
            wanted.insert(st);
            known = true;
          }
        }
        if (!known) {
          throw UsageError("--state " + word +
                           ": expected pending, running, succeeded, failed or stopped (several: "
                           "--state failed,running)");
        }
        word.clear();
      }
    }
    auto keep = [&wanted](std::vector<backend::RunSummary> runs) {
      if (wanted.empty()) return runs;
      std::erase_if(runs, [&](const backend::RunSummary& r) { return !wanted.count(r.state); });
      return runs;
    };
    auto be = open_backend(env, target);
    if (!watch) {
      print(env, keep(be->list(filter)), o, false);
      return exit_code::kOk;
    }
    // --watch: the list now, then again whenever a run comes, goes or changes state;
    // until interrupted.
    bool first = true;
    be->watch_list(
        filter,
        [&](const std::vector<backend::RunSummary>& all) {
          auto runs = keep(all);
          if (!first && o != "json" && o != "yaml" && o != "name") {
            *env.out << (env.out_is_terminal ? "\033[H\033[2J" : "\n");
          }
          first = false;
          print(env, runs, o, true);
          env.out->flush();
          return static_cast<bool>(*env.out);
        },
        nullptr);
    return exit_code::kOk;
  }

  /// The runs as a table, as JSON (one line per list when `watching`), YAML (one
  /// document per list) or names.
  void print(Env& env, const std::vector<backend::RunSummary>& listed, const std::string& o,
             bool watching) const {
    const auto runs = grouped(listed);
    const auto now = env.clock->now();
    if (o == "json" || o == "yaml") {
      nlohmann::ordered_json j;
      j["runs"] = nlohmann::ordered_json::array();
      for (const auto& r : runs) j["runs"].push_back(to_json(r, now));
      if (o == "json" && watching) {
        *env.out << j.dump() << "\n";
        return;
      }
      if (o == "yaml" && watching) *env.out << "---\n";
      print_document(env, j, o);
      return;
    }
    if (o == "name") {
      if (watching) *env.out << "---\n";
      for (const auto& r : runs) *env.out << r.name << "\n";
      return;
    }
    if (runs.empty()) {
      if (!env.global.quiet || watching) *env.err << "No runs found.\n";
      return;
    }
    size_t width = 4;
    for (const auto& r : runs) width = std::max(width, r.name.size());
    const bool ns = all_namespaces;
    // -o wide adds the sweep each run belongs to and when it was created.
    const bool wide = o == "wide";
    size_t sweep_w = 5;
    for (const auto& r : runs) sweep_w = std::max(sweep_w, r.sweep.size());
    std::string header = ns ? fmt::format("{:<16}  ", "NAMESPACE") : "";
    const size_t age_w = wide ? 5 : 0;  // the last column is not padded
    // KIND: train (a Job; NODES its pods), dev (the Job of a dev pod) or serve (a Deployment;
    // NODES its replicas).
    header += fmt::format("{:<{}}  {:<5}  {:<10} {:>5} {:>5}  {:<{}}", "NAME", width, "KIND",
                          "STATE", "NODES", "GPUS", "AGE", age_w);
    if (wide) header += fmt::format("  {:<{}}  {}", "SWEEP", sweep_w, "CREATED");
    *env.out << header << "\n";
    for (const auto& r : runs) {
      std::string row =
          ns ? fmt::format("{:<16}  ", r.namespace_.empty() ? "-" : r.namespace_) : "";
      // A run of a sweep that waits for its place (train.sweep.parallel): Waiting.
      const std::string state = r.queued && r.state == backend::RunState::kPending
                                    ? "Waiting"
                                    : backend::to_string(r.state);
      row += fmt::format("{:<{}}  {:<5}  {:<10} {:>5} {:>5}  {:<{}}", r.name, width, r.kind, state,
                         r.nodes, r.gpus, format_age(now - r.created), age_w);
      if (wide) {
        row += fmt::format("  {:<{}}  {}", r.sweep.empty() ? "-" : r.sweep, sweep_w,
                           format_rfc3339(r.created));
      }
      *env.out << row << "\n";
    }
  }
};

}  // namespace

void add_list_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand(
      "list", "List runs and services: name, kind, state, nodes (replicas), GPUs, age");
  opts->target.add_to(*sub);
  sub->add_flag("-A,--all-namespaces", opts->all_namespaces, "Runs of every namespace");
  sub->add_option("-l,--selector", opts->selector,
                  "Only runs whose labels match, as kubectl -l: team=vision,tier!=dev, "
                  "'env in (a,b)', '!key'")
      ->type_name("SELECTOR");
  sub->add_option("--state", opts->states,
                  "Only runs in these states (comma-separated or repeated)")
      ->type_name("pending|running|succeeded|failed|stopped");
  sub->add_option("--sweep", opts->sweep, "Only the runs of this sweep (its base name)")
      ->type_name("SWEEP");
  sub->add_flag("-w,--watch", opts->watch,
                "Print the list again whenever a run comes, goes or changes state (redrawn in "
                "place on a terminal); until interrupted");
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
