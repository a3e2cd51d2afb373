#include "cmd/events.h"

#include <algorithm>
#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/timefmt.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

void print_events(Env& env, const std::vector<RunEvent>& events,
                  std::chrono::system_clock::time_point now) {
  if (events.empty()) {
    *env.out << "No events (the API server keeps them for an hour by default).\n";
    return;
  }
  std::size_t type_w = 4, reason_w = 6, object_w = 6;
  for (const auto& e : events) {
    type_w = std::max(type_w, e.type.size());
    reason_w = std::max(reason_w, e.reason.size());
    object_w = std::max(object_w, e.object.size());
  }
  const bool colour = env.out_is_terminal && env.color();
  *env.out << fmt::format("{:<6} {:<{}}  {:<{}}  {:<{}}  {}\n", "AGE", "TYPE", type_w, "REASON",
                          reason_w, "OBJECT", object_w, "MESSAGE");
  for (const auto& e : events) {
    const std::string age = e.last ? format_age(now - *e.last) : "-";
    std::string message = e.message;
    if (e.count > 1) message += fmt::format(" (x{})", e.count);
    const bool warning = e.type == "Warning";
    *env.out << fmt::format("{:<6} {}{:<{}}{}  {:<{}}  {:<{}}  {}\n", age,
                            colour && warning ? "\033[33m" : "", e.type, type_w,
                            colour && warning ? "\033[0m" : "", e.reason, reason_w, e.object,
                            object_w, message);
    if (!e.meaning.empty()) {
      *env.out << fmt::format("{:<6} {:<{}}  -> {}\n", "", "", type_w, e.meaning);
    }
  }
}

nlohmann::ordered_json events_json(const std::vector<RunEvent>& events) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : events) {
    nlohmann::ordered_json j;
    j["time"] = e.last ? format_rfc3339(*e.last) : "";
    j["firstTime"] = e.first ? format_rfc3339(*e.first) : "";
    j["count"] = e.count;
    j["type"] = e.type;
    j["reason"] = e.reason;
    j["object"] = e.object;
    j["message"] = e.message;
    j["source"] = e.source;
    j["meaning"] = e.meaning;
    out.push_back(std::move(j));
  }
  return out;
}

namespace {

struct EventsOptions {
  TargetFlags target;
  std::string run;

  int run_events(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json" && o != "yaml") {
      throw UsageError("-o " + o + ": events prints table, json or yaml");
    }
    auto be = open_backend(env, target, run);
    const backend::RunStatus st = be->status(run);
    if (st.summary.namespace_.empty() && !env.global.quiet) {
      *env.err << "ktrain: " << run
               << " is a local run: it has no events ('ktrain status' and 'ktrain logs' say "
                  "what happened)\n";
    }
    if (o == "json" || o == "yaml") {
      print_document(
          env, nlohmann::ordered_json{{"run", st.summary.name}, {"events", events_json(st.events)}},
          o);
    } else if (!st.summary.namespace_.empty()) {
      print_events(env, st.events, env.clock->now());
    }
    return exit_code::kOk;
  }
};

}  // namespace

void add_events_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<EventsOptions>();
  auto* sub = app.add_subcommand(
      "events",
      "Show the events of a run's Job and pods, oldest first, with what the ones that matter "
      "mean (FailedScheduling, an image that cannot be pulled, preemption, a quota, ...)");
  sub->add_option("RUN", opts->run, "The run's name (from submit or list)")->required();
  opts->target.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run_events(env); });
}

}  // namespace ktrain::cmd
