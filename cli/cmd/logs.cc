#include "cmd/logs.h"

#include <memory>
#include <optional>
#include <ostream>

#include "base/duration.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "cmd/log_filter.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct LogsOptions {
  TargetFlags target;
  std::string run;
  bool follow = false;
  int rank = -1;
  int node = -1;
  std::string since;
  int tail = -1;
  bool timestamps = false;
  bool previous = false;
  std::string container;
  std::vector<std::string> grep, exclude;
  std::string save;

  backend::LogOptions resolved;
  std::optional<LogFilter> filter;

  void validate(const Env& env) {
    resolved.follow = follow;
    resolved.timestamps = timestamps;
    resolved.previous = previous;
    resolved.container = container;
    if (rank < -1) throw UsageError("--rank " + std::to_string(rank) + ": expected a rank >= 0");
    if (node < -1) throw UsageError("--node " + std::to_string(node) + ": expected a node >= 0");
    if (rank >= 0 && node >= 0) throw UsageError("--rank and --node cannot be used together");
    if (rank >= 0) resolved.rank = rank;
    if (node >= 0) resolved.node = node;
    if (tail < -1)
      throw UsageError("--tail " + std::to_string(tail) + ": expected -1 (all) or more");
    if (tail >= 0) resolved.tail = tail;
    filter.emplace(grep, exclude);  // a bad expression: exit 2, before the cluster is asked
    if (!save.empty() && env.global.output != "" && env.global.output != "table") {
      throw UsageError("--save writes the logs to files; -o " + env.global.output +
                       " does not apply");
    }
    if (!since.empty()) {
      if (auto t = parse_rfc3339(since)) {
        resolved.since = *t;
      } else if (auto s = parse_duration_seconds(since)) {
        resolved.since = env.clock->now() - std::chrono::seconds(*s);
      } else {
        throw UsageError("--since " + since +
                         ": expected a duration like 10m or a time like 2026-01-31T12:00:00Z");
      }
    }
  }

  int run_logs(Env& env) const {
    auto be = open_backend(env, target, run);
    backend::LogOptions o = resolved;
    // Ctrl-C ends a follow with everything received printed (the lines held to put
    // the nodes in order, and for a local run what the nodes have written).
    std::optional<StopOnSignal> stop_on_signal;
    if (o.follow) {
      stop_on_signal.emplace();
      o.cancelled = [] { return StopOnSignal::received() != 0; };
    }
    // --save: the folder is made (or refused) once the run is found.
    std::optional<LogSaver> saver;
    if (!save.empty()) saver.emplace(save, timestamps);
    const bool highlight = filter->active() && env.out_is_terminal && env.color();
    auto print = [&](const backend::LogLine& l) {
      if (!l.notice && filter->active() && !filter->keep(l.text)) return true;
      if (saver) {
        saver->write(l);
        return true;
      }
      if (highlight && !l.notice) {
        backend::LogLine h = l;
        h.text = filter->highlighted(l.text);
        print_log_line(env, h, timestamps);
      } else {
        print_log_line(env, l, timestamps);
      }
      return static_cast<bool>(*env.out);
    };
    if (o.follow || timestamps) {
      // Lines of different nodes in time order: following, within a short window;
      // with --timestamps, the whole log.
      logs_in_order(env, *be, run, o, print);
    } else {
      be->logs(run, o, print);
    }
    env.out->flush();
    if (saver) {
      const std::string saved = saver->finish();
      if (!env.global.quiet) *env.err << "ktrain: saved " << saved << "\n";
    }
    if (const int sig = StopOnSignal::received(); sig != 0 && stop_on_signal) return 128 + sig;
    return exit_code::kOk;
  }
};

}  // namespace

void add_logs_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<LogsOptions>();
  auto* sub =
      app.add_subcommand("logs", "Print every rank's log, each line prefixed with its rank");
  sub->add_option("RUN", opts->run, "The run's name")->required();
  opts->target.add_to(*sub);
  sub->add_flag("-f,--follow", opts->follow, "Keep printing until the run ends");
  sub->add_option("--rank", opts->rank, "Only this worker rank");
  sub->add_option("--node", opts->node, "Only this node (pod index)");
  sub->add_option("--since", opts->since,
                  "Only lines newer than a duration (10m) or a time (RFC 3339)");
  sub->add_option("--tail", opts->tail, "Only the last N lines of each node (-1: all)");
  sub->add_flag("--timestamps", opts->timestamps, "Put each line's time in front");
  sub->add_flag("--previous", opts->previous, "The previous attempt's log of a restarted rank");
  sub->add_option("--container", opts->container,
                  "The container (default: the training container)");
  sub->add_option("--grep", opts->grep,
                  "Only lines whose text matches this regular expression (ECMAScript; "
                  "repeatable: any of them), matches highlighted on a terminal")
      ->type_name("RE");
  sub->add_option("--exclude", opts->exclude,
                  "Leave out lines whose text matches this regular expression (repeatable)")
      ->type_name("RE");
  sub->add_option("--save", opts->save,
                  "Write the logs to files in DIR instead (rank-R.log for each worker rank, "
                  "node-N.log for a node's other lines); DIR must be new or empty")
      ->type_name("DIR");
  sub->callback([opts, &env, &result] {
    opts->validate(env);
    result.status = opts->run_logs(env);
  });
}

}  // namespace ktrain::cmd
