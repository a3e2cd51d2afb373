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
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "name") {
      throw UsageError("-o " + o + ": list prints table, wide, json or name");
    }
    auto be = open_backend(env, target);
    const auto runs = be->list(all_namespaces);
    const auto now = env.clock->now();
    if (o == "json") {
      nlohmann::ordered_json j;
      j["runs"] = nlohmann::ordered_json::array();
      for (const auto& r : runs) j["runs"].push_back(to_json(r, now));
      *env.out << j.dump(2) << "\n";
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
    std::string header = ns ? fmt::format("{:<16}  ", "NAMESPACE") : "";
    *env.out << header
             << fmt::format("{:<{}}  {:<10} {:>5} {:>5}  {}\n", "NAME", width, "STATE", "NODES",
                            "GPUS", "AGE");
    for (const auto& r : runs) {
      std::string row =
          ns ? fmt::format("{:<16}  ", r.namespace_.empty() ? "-" : r.namespace_) : "";
      row += fmt::format("{:<{}}  {:<10} {:>5} {:>5}  {}\n", r.name, width,
                         backend::to_string(r.state), r.nodes, r.gpus, format_age(now - r.created));
      *env.out << row;
    }
    return exit_code::kOk;
  }
};

}  // namespace

void add_list_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand("list", "List runs: name, state, nodes, GPUs, age");
  opts->target.add_to(*sub);
  sub->add_flag("-A,--all-namespaces", opts->all_namespaces, "Runs of every namespace");
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
