#include "cmd/list.h"

#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/timefmt.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct ListOptions {
  TargetFlags target;
  bool all_namespaces = false;

  int run(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "yaml" && o != "name") {
      throw UsageError("-o " + o + ": list prints table, wide, json, yaml or name");
    }
    auto be = open_backend(env, target);
    const auto runs = be->list(all_namespaces);
    const auto now = env.clock->now();
    if (o == "json" || o == "yaml") {
      nlohmann::ordered_json j;
      j["runs"] = nlohmann::ordered_json::array();
      for (const auto& r : runs) j["runs"].push_back(to_json(r, now));
      print_document(env, j, o);
      return exit_code::kOk;
    }
    if (o == "name") {
      for (const auto& r : runs) *env.out << r.name << "\n";
      return exit_code::kOk;
    }
    if (runs.empty()) {
      if (!env.global.quiet) *env.err << "No runs found.\n";
      return exit_code::kOk;
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
    // KIND: train (a Job; NODES its pods) or serve (a Deployment; NODES its replicas).
    header += fmt::format("{:<{}}  {:<5}  {:<10} {:>5} {:>5}  {:<{}}", "NAME", width, "KIND",
                          "STATE", "NODES", "GPUS", "AGE", age_w);
    if (wide) header += fmt::format("  {:<{}}  {}", "SWEEP", sweep_w, "CREATED");
    *env.out << header << "\n";
    for (const auto& r : runs) {
      std::string row =
          ns ? fmt::format("{:<16}  ", r.namespace_.empty() ? "-" : r.namespace_) : "";
      row += fmt::format("{:<{}}  {:<5}  {:<10} {:>5} {:>5}  {:<{}}", r.name, width, r.kind,
                         backend::to_string(r.state), r.nodes, r.gpus, format_age(now - r.created),
                         age_w);
      if (wide) {
        row += fmt::format("  {:<{}}  {}", r.sweep.empty() ? "-" : r.sweep, sweep_w,
                           format_rfc3339(r.created));
      }
      *env.out << row << "\n";
    }
    return exit_code::kOk;
  }
};

}  // namespace

void add_list_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand(
      "list", "List runs and services: name, kind, state, nodes (replicas), GPUs, age");
  opts->target.add_to(*sub);
  sub->add_flag("-A,--all-namespaces", opts->all_namespaces, "Runs of every namespace");
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
