#include "cmd/run_common.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include <mutex>
#include <ostream>

#include <fmt/format.h>

#include "backend/kube_backend.h"
#include "backend/local_backend.h"
#include "backend/log_order.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/connection.h"
#include "kube/pull_failure.h"
#include "render/yaml_json.h"

namespace ktrain::cmd {

using backend::RunState;

void TargetFlags::add_to(CLI::App& app) {
  app.add_flag("--local", local, "Use this machine instead of a cluster");
}

bool cluster_configured(const Env& env) {
  if (!env.global.kubeconfig.empty()) return true;
  if (auto k = env.var("KUBECONFIG"); k && !k->empty()) return true;
  if (env.var("KUBERNETES_SERVICE_HOST")) return true;
  if (auto h = env.var("HOME"); h && env.fs->exists(*h + "/.kube/config")) return true;
  return false;
}

namespace {

std::unique_ptr<backend::Backend> open_local(Env& env) {
  return std::make_unique<backend::LocalBackend>(env, backend::find_local_programs(env));
}

bool terminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed;
}

}  // namespace

std::unique_ptr<backend::Backend> open_backend(Env& env, const TargetFlags& target,
                                               const std::string& run) {
  if (target.local) return open_local(env);
  if (!run.empty() && (env.var("XDG_STATE_HOME") || env.var("HOME")) &&
      backend::LocalBackend(env, backend::LocalPrograms{}).has_run(run)) {
    return open_local(env);
  }
  if (auto l = env.var("KTRAIN_LOCAL"); l && *l == "1") return open_local(env);
  // Never a silent local run: a CI job that lost its credentials must not train
  // on the CI runner.
  if (!cluster_configured(env)) {
    throw Error(
        "no cluster is configured (no --kubeconfig, $KUBECONFIG or ~/.kube/config, and not in "
        "a pod): pass --local (or set KTRAIN_LOCAL=1) to use this machine",
        exit_code::kUnreachable);
  }
  return std::make_unique<backend::KubeBackend>(std::make_unique<kube::Connection>(env), env);
}

std::unique_ptr<backend::Backend> open_backend_for_sweep(Env& env, const TargetFlags& target,
                                                         const std::string& sweep) {
  if (!target.local && (env.var("XDG_STATE_HOME") || env.var("HOME"))) {
    for (const auto& s : backend::LocalBackend(env, backend::LocalPrograms{}).list({})) {
      if (s.sweep == sweep) return open_local(env);
    }
  }
  return open_backend(env, target, sweep);  // a local run of that name: local too
}

void print_log_line(Env& env, const backend::LogLine& line, bool timestamps,
                    const std::string& run_prefix) {
  static constexpr const char* kColors[] = {"\033[36m", "\033[33m", "\033[35m", "\033[32m",
                                            "\033[34m", "\033[91m", "\033[96m", "\033[93m"};
  if (line.notice) {
    // ktrain's own word about the stream, on stderr, in order with the lines before it.
    env.out->flush();
    *env.err << "ktrain: " << run_prefix << line.text << '\n';
    return;
  }
  // One string per line, built without temporaries: with many ranks this is hot.
  std::string_view text = line.text;
  std::string_view prefix;
  std::string node_prefix;
  int colour_key = line.rank;
  if (text.substr(0, 6) == "[rank ") {
    const auto close = text.find(']');
    if (close != std::string_view::npos) {
      prefix = text.substr(0, close + 1);
      text.remove_prefix(close + 1);
      colour_key = std::atoi(line.text.c_str() + 6);
    }
  }
  bool space = false;  // between "[node I]" and the text
  if (prefix.empty()) {
    node_prefix = "[node " + std::to_string(line.rank) + "]";
    prefix = node_prefix;
    space = !text.empty();
  }
  thread_local std::string out;
  out.clear();
  if (timestamps && !line.timestamp.empty()) {
    out += line.timestamp;
    out += ' ';
  }
  out += run_prefix;
  if (env.out_is_terminal && env.color()) {
    out += kColors[static_cast<size_t>(colour_key) % 8];
    out += prefix;
    out += "\033[0m";
  } else {
    out += prefix;
  }
  if (space) out += ' ';
  out += text;
  out += '\n';
  *env.out << out;
}

std::chrono::seconds parse_timeout_flag(const std::string& flag, const std::string& value) {
  auto s = parse_duration_seconds(value);
  if (!s || *s <= 0) {
    throw UsageError(flag + " " + value + ": expected a duration like 90s, 10m or 2h");
  }
  return std::chrono::seconds(*s);
}

namespace {

void explain_failure(Env& env, backend::Backend& backend, const backend::RunStatus& st) {
  const int failed = st.first_failed >= 0 ? st.first_failed : [&] {
    for (const auto& r : st.ranks) {
      if (r.phase == "Failed") return r.index;
    }
    return -1;
  }();
  std::string why = st.explanations.empty() ? "" : st.explanations.front();
  if (failed < 0) {
    *env.err << "ktrain: run " << st.summary.name << " failed" << (why.empty() ? "" : ": " + why)
             << "\n";
    return;
  }
  // Ranks are rows of the pods there are (a rank whose pod was deleted has none).
  const auto it =
      std::find_if(st.ranks.begin(), st.ranks.end(),
                   [failed](const backend::RankStatus& r) { return r.index == failed; });
  if (it == st.ranks.end()) {
    *env.err << "ktrain: run " << st.summary.name << " failed: node " << failed << " failed first"
             << (why.empty() ? "" : ": " + why) << "\n";
    return;
  }
  const auto& r = *it;
  std::string detail = "pod " + r.pod;
  if (r.exit_code) detail += ", exit code " + std::to_string(*r.exit_code);
  if (!r.reason.empty()) detail += ", " + r.reason;
  *env.err << "ktrain: run " << st.summary.name << " failed: node " << failed << " failed first ("
           << detail << ")" << (r.message.empty() ? "" : ": " + r.message) << "\n";
  backend::LogOptions opts;
  opts.node = failed;
  opts.tail = 20;
  std::vector<backend::LogLine> lines;
  try {
    backend.logs(st.summary.name, opts, [&](const backend::LogLine& l) {
      lines.push_back(l);
      return true;
    });
  } catch (const Error& e) {
    *env.err << "ktrain: (its log cannot be read: " << e.what() << ")\n";
    lines.clear();
  }
  if (lines.empty() && !r.last_lines.empty()) {
    // The log is gone (or was never reachable): what the launcher kept in the pod.
    *env.err << "ktrain: the last lines it printed, from its termination message:\n";
    for (const auto& l : r.last_lines) *env.err << "  " << l << "\n";
    return;
  }
  if (lines.empty()) return;
  *env.err << "ktrain: last " << lines.size() << " lines of node " << failed << ":\n";
  for (const auto& l : lines) *env.err << "  " << l.text << "\n";
}

}  // namespace

void logs_in_order(Env& env, backend::Backend& be, const std::string& run, backend::LogOptions opts,
                   const backend::LogSink& sink) {
  backend::OrderedLogSink::Options o;
  o.hold_all = !opts.follow;
  if (opts.follow) o.flush = [&env] { env.out->flush(); };
  // Lines may still be held after a chunk: the ordered sink flushes after its releases.
  opts.flush = nullptr;
  backend::OrderedLogSink ordered(sink, o);
  try {
    be.logs(run, opts, ordered.sink());
  } catch (...) {
    ordered.finish();  // what arrived before the error is printed before it
    throw;
  }
  ordered.finish();
}

namespace {
std::atomic<int> g_stop_signal{0};
struct sigaction g_old_int, g_old_term;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
}
}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop_signal.store(0);
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // the second one takes the default action
  // A signal ignored by whoever started us (SIGINT of a job started in the background
  // by a shell) stays ignored.
  for (auto [sig, old] : {std::pair{SIGINT, &g_old_int}, std::pair{SIGTERM, &g_old_term}}) {
    ::sigaction(sig, nullptr, old);
    if (old->sa_handler != SIG_IGN) ::sigaction(sig, &sa, nullptr);
  }
}

StopOnSignal::~StopOnSignal() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopOnSignal::received() {
  return g_stop_signal.load();
}

void release_sweep(Env& env, backend::Backend& be, const std::string& sweep,
                   const std::vector<std::string>& runs, int parallel,
                   const std::function<bool()>& stop) {
  backend::ListFilter filter;
  filter.sweep = sweep;
  size_t started = 0;
  while (!(stop && stop())) {
    std::map<std::string, backend::RunSummary> now;
    for (auto& r : be.list(filter)) now.emplace(r.name, std::move(r));
    int active = 0;
    std::vector<std::string> waiting;  // in the order of `runs`
    for (const auto& name : runs) {
      auto it = now.find(name);
      if (it == now.end()) continue;  // deleted
      const auto& r = it->second;
      if (r.queued) {
        waiting.push_back(name);
      } else if (r.state == RunState::kPending || r.state == RunState::kRunning) {
        ++active;
      }
    }
    if (waiting.empty()) return;
    for (size_t i = 0; i < waiting.size() && active < parallel; ++i, ++active) {
      be.resume(waiting[i]);
      ++started;
      if (!env.global.quiet) {
        // One write per line: the logs of a --follow may be printed meanwhile.
        *env.err << fmt::format("ktrain: started {} ({} still wait; at most {} at once)\n",
                                waiting[i], waiting.size() - i - 1, parallel);
      }
    }
    for (int i = 0; i < 10 && !(stop && stop()); ++i) {
      env.clock->sleep_for(std::chrono::milliseconds(100));
    }
  }
}

int wait_for_runs(Env& env, backend::Backend& backend, const std::vector<std::string>& runs,
                  std::optional<std::chrono::seconds> timeout, bool follow,
                  const std::function<bool()>& abort,
                  const std::function<void(const backend::RunStatus&)>& on_end) {
  const auto start = env.clock->steady_now();
  // Following, Ctrl-C stops the follow (the runs go on) with every line received printed.
  std::optional<StopOnSignal> stop_on_signal;
  if (follow) stop_on_signal.emplace();
  auto interrupted = [&] { return stop_on_signal && StopOnSignal::received() != 0; };
  auto timed_out = [&] {
    return (abort && abort()) || (timeout && env.clock->steady_now() - start >= *timeout);
  };
  auto say_interrupted = [&](const std::string& run) {
    *env.err << "ktrain: stopped following; run " << run << " goes on ('ktrain delete " << run
             << "' ends it)\n";
    return 128 + StopOnSignal::received();
  };
  // An image that cannot be pulled (not found, unauthorized, a bad reference) ends the
  // wait with the registry's words once it has failed for kube::kPullGiveUp, rather than
  // waiting until --timeout (or forever); a registry that is only slow or down is waited for.
  auto cannot_pull = [&](const std::string& run, const std::string& what) {
    *env.err << "ktrain: error: run " << run << " cannot start: " << what << "\n"
             << "ktrain: the image cannot be pulled (after "
             << format_duration(kube::kPullGiveUp.count())
             << " of trying): check image / image.ref, that 'ktrain build' pushed it, and "
                "imagePullSecrets for a private registry; the run is left as it is ('ktrain "
                "delete "
             << run << "' removes it)\n";
    return exit_code::kFailed;
  };
  int status = exit_code::kOk;
  for (const auto& run : runs) {
    std::mutex pull_mu;
    kube::PullFailureWatch pulls;
    auto pull_given_up = [&]() -> std::optional<std::string> {
      std::lock_guard<std::mutex> lk(pull_mu);
      return pulls.given_up(env.clock->steady_now());
    };
    if (follow) {
      backend::LogOptions opts;
      opts.follow = true;
      opts.cancelled = [&] { return interrupted() || timed_out() || pull_given_up().has_value(); };
      opts.on_waiting = [&](int node, const std::string& reason, const std::string& message) {
        std::lock_guard<std::mutex> lk(pull_mu);
        pulls.observe(node, reason, message, env.clock->steady_now());
      };
      const std::string run_prefix = runs.size() > 1 ? run + " " : "";
      logs_in_order(env, backend, run, opts, [&](const backend::LogLine& l) {
        print_log_line(env, l, false, run_prefix);
        return !timed_out();
      });
      env.out->flush();
      if (interrupted()) return say_interrupted(run);
      if (auto what = pull_given_up()) return cannot_pull(run, *what);
    }
    backend::RunStatus st = backend.status(run);
    while (!terminal(st.summary.state)) {
      if (interrupted()) return say_interrupted(run);
      if (abort && abort()) return exit_code::kFailed;
      {
        std::lock_guard<std::mutex> lk(pull_mu);
        const auto now = env.clock->steady_now();
        for (const auto& r : st.ranks) pulls.observe(r.index, r.reason, r.message, now);
      }
      if (auto what = pull_given_up()) return cannot_pull(run, *what);
      if (timed_out()) {
        *env.err << "ktrain: error: timed out after " << format_duration(timeout->count())
                 << " waiting for run " << run << " (" << to_string(st.summary.state) << ")\n";
        return exit_code::kTimeout;
      }
      env.clock->sleep_for(std::chrono::milliseconds(200));
      st = backend.status(run);
    }
    if (st.summary.state == RunState::kFailed) {
      explain_failure(env, backend, st);
      status = exit_code::kFailed;
    } else if (!env.global.quiet) {
      *env.err << "ktrain: run " << run << " succeeded\n";
    }
    if (on_end) on_end(st);
  }
  return status;
}

void print_document(Env& env, const nlohmann::ordered_json& doc, const std::string& format) {
  if (format == "yaml") {
    *env.out << render::to_yaml_document(doc);
  } else {
    *env.out << doc.dump(2) << "\n";
  }
}

nlohmann::ordered_json to_json(const backend::RunSummary& s,
                               std::chrono::system_clock::time_point now) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["kind"] = s.kind;
  if (!s.namespace_.empty()) j["namespace"] = s.namespace_;
  if (!s.sweep.empty()) j["sweep"] = s.sweep;
  j["state"] = backend::to_string(s.state);
  if (s.queued) j["queued"] = true;  // waits for a place in its sweep
  j["nodes"] = s.nodes;
  j["gpusPerNode"] = s.gpus;
  j["created"] = format_rfc3339(s.created);
  j["age"] = format_age(now - s.created);
  return j;
}

nlohmann::ordered_json to_json(const backend::RunStatus& s,
                               std::chrono::system_clock::time_point now) {
  nlohmann::ordered_json j = to_json(s.summary, now);
  if (!s.image.empty()) j["image"] = s.image;
  j["conditions"] = s.conditions;
  j["explanations"] = s.explanations;
  if (s.started) j["started"] = format_rfc3339(*s.started);
  if (s.finished) j["finished"] = format_rfc3339(*s.finished);
  if (!s.checkpoint.empty()) {
    j["checkpoint"] = {{"path", s.checkpoint}};
    if (s.checkpoint_written) j["checkpoint"]["written"] = format_rfc3339(*s.checkpoint_written);
  } else if (!s.checkpoint_note.empty()) {
    j["checkpoint"] = {{"note", s.checkpoint_note}};
  }
  j["firstFailedRank"] = s.first_failed >= 0 ? nlohmann::ordered_json(s.first_failed) : nullptr;
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (const auto& r : s.ranks) {
    nlohmann::ordered_json rj;
    rj["index"] = r.index;
    rj["pod"] = r.pod;
    rj["phase"] = r.phase;
    rj["node"] = r.node;
    rj["restarts"] = r.restarts;
    rj["exitCode"] = r.exit_code ? nlohmann::ordered_json(*r.exit_code) : nullptr;
    rj["reason"] = r.reason;
    rj["message"] = r.message;
    if (!r.last_lines.empty()) rj["lastLines"] = r.last_lines;
    ranks.push_back(std::move(rj));
  }
  return j;
}

}  // namespace ktrain::cmd
