#include "cmd/status.h"

#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/timefmt.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct StatusOptions {
  TargetFlags target;
  std::string run;

  bool watch = false;

  int run_status(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "yaml") {
      throw UsageError("-o " + o + ": status prints table, wide, json or yaml");
    }
    auto be = open_backend(env, target, run);
    if (!watch) {
      print(env, be->status(run), o, false);
      return exit_code::kOk;
    }
    // --watch: redrawn when something changed; ends with the run.
    backend::RunState final_state = backend::RunState::kUnknown;
    bool first = true;
    be->watch_status(
        run,
        [&](const backend::RunStatus& st) {
          if (o != "json" && o != "yaml" && !first) {
            if (env.out_is_terminal) {
              *env.out << "\033[H\033[2J";  // clear the screen, redraw in place
            } else {
              *env.out << "\n";
            }
          }
          first = false;
          print(env, st, o, true);
          env.out->flush();
          final_state = st.summary.state;
          return static_cast<bool>(*env.out);
        },
        nullptr);
    return final_state == backend::RunState::kFailed ? exit_code::kFailed : exit_code::kOk;
  }

  /// The status as a table, as JSON (one line per status when `watching`) or as YAML
  /// (one document per status).
  static void print(Env& env, const backend::RunStatus& st, const std::string& o, bool watching) {
    const auto now = env.clock->now();
    if (o == "json") {
      *env.out << to_json(st, now).dump(watching ? -1 : 2) << "\n";
      return;
    }
    if (o == "yaml") {
      if (watching) *env.out << "---\n";
      print_document(env, to_json(st, now), o);
      return;
    }
    const auto& s = st.summary;
    std::string conditions;
    for (const auto& c : st.conditions) conditions += (conditions.empty() ? "" : ", ") + c;
    const bool service = s.kind == "serve";
    *env.out << (service ? "Service:    " : "Run:        ") << s.name << "\n";
    if (!s.namespace_.empty()) *env.out << fmt::format("Namespace:  {}\n", s.namespace_);
    *env.out << fmt::format("State:      {}\n", backend::to_string(s.state));
    *env.out << (service ? "Replicas:   " : "Nodes:      ") << s.nodes << " x " << s.gpus
             << " GPUs\n";
    *env.out << fmt::format("Age:        {}\n", format_age(now - s.created));
    if (st.started && st.finished) {
      *env.out << fmt::format("Duration:   {}\n", format_age(*st.finished - *st.started));
    }
    if (!conditions.empty()) *env.out << fmt::format("Conditions: {}\n", conditions);
    for (const auto& e : st.explanations) *env.out << fmt::format("Why:        {}\n", e);
    size_t pod_w = 3, node_w = 4;
    for (const auto& r : st.ranks) {
      pod_w = std::max(pod_w, r.pod.size());
      node_w = std::max(node_w, r.node.size());
    }
    *env.out << "\n"
             << fmt::format("{:<5} {:<{}}  {:<10} {:<{}}  {:>8}  {:>4}  {}\n",
                            service ? "REPL" : "RANK", "POD", pod_w, "PHASE", "NODE", node_w,
                            "RESTARTS", "EXIT", "REASON");
    for (const auto& r : st.ranks) {
      std::string reason = r.reason;
      if (!r.message.empty()) reason += (reason.empty() ? "" : ": ") + r.message;
      *env.out << fmt::format("{:<5} {:<{}}  {:<10} {:<{}}  {:>8}  {:>4}  {}\n", r.index, r.pod,
                              pod_w, r.phase, r.node, node_w, r.restarts,
                              r.exit_code ? std::to_string(*r.exit_code) : "-", reason);
    }
  }
};

}  // namespace

void add_status_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<StatusOptions>();
  auto* sub =
      app.add_subcommand("status", "Show a run: state, one row per rank, why it waits or failed");
  sub->add_option("RUN", opts->run, "The run's name (from submit or list)")->required();
  opts->target.add_to(*sub);
  sub->add_flag("-w,--watch", opts->watch,
                "Redraw whenever the status changes, until the run ends (exit 1 if it failed)");
  sub->callback([opts, &env, &result] { result.status = opts->run_status(env); });
}

}  // namespace ktrain::cmd
