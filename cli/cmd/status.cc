#include "cmd/status.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/timefmt.h"
#include "cmd/events.h"
#include "cmd/notify.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct StatusOptions {
  TargetFlags target;
  std::string run;

  bool watch = false;
  bool events = false;    ///< --events: the events about the run's objects too
  std::string on_finish;  ///< --on-finish: a command for the run's end

  int run_status(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "yaml") {
      throw UsageError("-o " + o + ": status prints table, wide, json or yaml");
    }
    if (!on_finish.empty() && !watch) {
      throw UsageError("--on-finish runs when the watched run ends: add --watch");
    }
    // A local run or sweep of that name first, then as for submit.
    auto be = open_backend_for_sweep(env, target, run);
    if (!watch) {
      std::optional<backend::RunStatus> st;
      try {
        st = be->status(run);
        be->read_checkpoint(*st);
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {
        // Not a run: maybe a sweep (the runs' name without the last "-N").
        if (e.exit_status() != exit_code::kFailed) throw;
        auto sb = open_backend_for_sweep(env, target, run);
        auto runs = sb->sweep_runs(run);
        if (runs.empty()) throw;
        print_sweep(env, run, runs, o, false);
        return exit_code::kOk;
      }
      print(env, *st, o, false, events);
      return exit_code::kOk;
    }
    if (auto sb = watched_sweep(env, *be)) {
      if (!on_finish.empty()) {
        throw UsageError("--on-finish watches one run; " + run +
                         " is a sweep (ktrain submit --wait --on-finish runs it for each run)");
      }
      return watch_sweep(env, *sb, o);
    }
    // --watch: redrawn when something changed; ends with the run.
    backend::RunState final_state = backend::RunState::kUnknown;
    std::optional<backend::RunStatus> last;
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
          print(env, st, o, true, events);
          env.out->flush();
          final_state = st.summary.state;
          if (!on_finish.empty()) last = st;
          return static_cast<bool>(*env.out);
        },
        nullptr);
    if (last && (final_state == backend::RunState::kSucceeded ||
                 final_state == backend::RunState::kFailed)) {
      notify_finish(env, Notify{on_finish, ""}, *last);
    }
    return final_state == backend::RunState::kFailed ? exit_code::kFailed : exit_code::kOk;
  }

  /// The backend that has `run` as a sweep, when `run` is no run of `be` but a sweep.
  std::unique_ptr<backend::Backend> watched_sweep(Env& env, backend::Backend& be) const {
    try {
      be.status(run);
      return nullptr;
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      if (e.exit_status() != exit_code::kFailed) throw;
      auto sb = open_backend_for_sweep(env, target, run);
      if (sb->sweep_runs(run).empty()) throw;
      return sb;
    }
  }

  /// --watch of a sweep: redrawn when a run's state changes, until every run has ended
  /// (exit 1 when one failed).
  int watch_sweep(Env& env, backend::Backend& be, const std::string& o) const {
    std::string last;
    bool first = true;
    while (true) {
      const auto runs = be.sweep_runs(run);
      std::string fp;
      bool ended = true, failed = false;
      for (const auto& r : runs) {
        fp += r.summary.name + " " + backend::to_string(r.summary.state) +
              (r.summary.queued ? " q" : "") + "\n";
        const auto s = r.summary.state;
        ended = ended && (s == backend::RunState::kSucceeded || s == backend::RunState::kFailed);
        failed = failed || s == backend::RunState::kFailed;
      }
      if (fp != last) {
        if (!first && o != "json" && o != "yaml") {
          *env.out << (env.out_is_terminal ? "\033[H\033[2J" : "\n");
        }
        first = false;
        print_sweep(env, run, runs, o, true);
        env.out->flush();
        if (!*env.out) return exit_code::kOk;
        last = std::move(fp);
      }
      if (ended || runs.empty()) return failed ? exit_code::kFailed : exit_code::kOk;
      env.clock->sleep_for(std::chrono::seconds(1));
    }
  }

  /// A sweep: a line of counts, then a row per run (its combination, state, duration,
  /// exit code); or JSON / YAML.
  static void print_sweep(Env& env, const std::string& sweep,
                          const std::vector<backend::SweepRun>& runs, const std::string& o,
                          bool watching) {
    const auto now = env.clock->now();
    std::vector<std::string> params;  // the parameter names, in file order
    for (const auto& r : runs) {
      for (const auto& [k, v] : r.params) {
        if (std::find(params.begin(), params.end(), k) == params.end()) params.push_back(k);
      }
    }
    auto state_of = [](const backend::SweepRun& r) -> std::string {
      return r.summary.queued && r.summary.state == backend::RunState::kPending
                 ? "Waiting"
                 : backend::to_string(r.summary.state);
    };
    auto duration_of = [&now](const backend::SweepRun& r) -> std::optional<std::int64_t> {
      if (!r.started) return std::nullopt;
      const auto end = r.finished ? *r.finished : now;
      return std::chrono::duration_cast<std::chrono::seconds>(end - *r.started).count();
    };
    std::map<std::string, int> counts;
    std::vector<std::string> order;  // the states, in order of first appearance
    for (const auto& r : runs) {
      const auto s = state_of(r);
      if (!counts.count(s)) order.push_back(s);
      ++counts[s];
    }
    if (o == "json" || o == "yaml") {
      nlohmann::ordered_json j;
      j["sweep"] = sweep;
      if (!runs.front().summary.namespace_.empty())
        j["namespace"] = runs.front().summary.namespace_;
      j["counts"] = nlohmann::ordered_json::object();
      for (const auto& s : order) j["counts"][s] = counts[s];
      j["runs"] = nlohmann::ordered_json::array();
      for (const auto& r : runs) {
        nlohmann::ordered_json x;
        x["name"] = r.summary.name;
        x["params"] = nlohmann::ordered_json::object();
        for (const auto& [k, v] : r.params) x["params"][k] = v;
        x["state"] = state_of(r);
        x["started"] = r.started ? nlohmann::ordered_json(format_rfc3339(*r.started)) : nullptr;
        x["finished"] = r.finished ? nlohmann::ordered_json(format_rfc3339(*r.finished)) : nullptr;
        auto d = duration_of(r);
        x["durationSeconds"] = d ? nlohmann::ordered_json(*d) : nullptr;
        x["exitCode"] = r.exit_code ? nlohmann::ordered_json(*r.exit_code) : nullptr;
        j["runs"].push_back(std::move(x));
      }
      if (o == "json") {
        *env.out << j.dump(watching ? -1 : 2) << "\n";
      } else {
        if (watching) *env.out << "---\n";
        print_document(env, j, o);
      }
      return;
    }
    std::string summary;
    for (const auto& s : order) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(counts[s]) + " " + s;
    }
    *env.out << "Sweep:      " << sweep << "\n";
    if (!runs.front().summary.namespace_.empty()) {
      *env.out << "Namespace:  " << runs.front().summary.namespace_ << "\n";
    }
    *env.out << "Runs:       " << runs.size() << " (" << summary << ")\n\n";
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"RUN"};
    for (const auto& p : params) {
      std::string up = p;
      for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      header.push_back(up);
    }
    for (const char* h : {"STATE", "DURATION", "EXIT"}) header.push_back(h);
    rows.push_back(header);
    for (const auto& r : runs) {
      std::vector<std::string> row = {r.summary.name};
      for (const auto& p : params) {
        std::string v = "-";
        for (const auto& [k, val] : r.params) {
          if (k == p) v = val;
        }
        row.push_back(v);
      }
      row.push_back(state_of(r));
      auto d = duration_of(r);
      row.push_back(d ? format_age(std::chrono::seconds(*d)) : "-");
      row.push_back(r.exit_code ? std::to_string(*r.exit_code) : "-");
      rows.push_back(std::move(row));
    }
    std::vector<size_t> widths(header.size(), 0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
    }
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
      }
      *env.out << line << "\n";
    }
  }

  /// The status as a table, as JSON (one line per status when `watching`) or as YAML
  /// (one document per status).
  static void print(Env& env, const backend::RunStatus& st, const std::string& o, bool watching,
                    bool events) {
    const auto now = env.clock->now();
    if (o == "json" || o == "yaml") {
      nlohmann::ordered_json j = to_json(st, now);
      if (events) j["events"] = events_json(st.events);
      if (o == "json") {
        *env.out << j.dump(watching ? -1 : 2) << "\n";
        return;
      }
      if (watching) *env.out << "---\n";
      print_document(env, j, o);
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
    if (!st.image.empty()) *env.out << fmt::format("Image:      {}\n", st.image);
    *env.out << fmt::format("Age:        {}\n", format_age(now - s.created));
    if (st.started && st.finished) {
      *env.out << fmt::format("Duration:   {}\n", format_age(*st.finished - *st.started));
    }
    if (!conditions.empty()) *env.out << fmt::format("Conditions: {}\n", conditions);
    if (!st.checkpoint.empty()) {
      *env.out << fmt::format(
          "Checkpoint: {}{}\n", st.checkpoint,
          st.checkpoint_written ? " (written " + format_age(now - *st.checkpoint_written) + " ago)"
                                : "");
    } else if (!st.checkpoint_note.empty()) {
      *env.out << fmt::format("Checkpoint: {}\n", st.checkpoint_note);
    }
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
    for (const auto& r : st.ranks) {
      if (r.last_lines.empty()) continue;
      *env.out << "\nLast lines of " << (service ? "replica " : "node ") << r.index
               << " (kept in its termination message, with the pod):\n";
      for (const auto& l : r.last_lines) *env.out << "  " << l << "\n";
    }
    if (events && !s.namespace_.empty()) {
      *env.out << "\nEvents:\n";
      print_events(env, st.events, now);
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
  sub->add_flag("--events", opts->events,
                "Also the events about the run's Job and pods, oldest first, explained (as "
                "ktrain events)");
  sub->add_option("--on-finish", opts->on_finish,
                  "With --watch: run this shell command when the run ends, with KTRAIN_RUN, "
                  "KTRAIN_NAMESPACE, KTRAIN_STATE and KTRAIN_EXIT_CODE set")
      ->type_name("CMD");
  sub->callback([opts, &env, &result] { result.status = opts->run_status(env); });
}

}  // namespace ktrain::cmd
