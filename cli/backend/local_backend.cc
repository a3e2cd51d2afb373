#include "backend/local_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>

#include "backend/local_run.h"
#include "backend/run_id.h"
#include "base/error.h"
#include "base/random.h"
#include "base/timefmt.h"
#include "net/curl_transport.h"
#include "project/sweep.h"
#include "render/workloads.h"
#include "runtime/checkpoint.h"

namespace ktrain::backend {

namespace fs = std::filesystem;

namespace {

/// Whether `pid` runs (a zombie, which nobody may reap in a container, does not).
bool process_alive(int pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

void write_private_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
  const bool ok =
      ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  ::close(fd);
  if (!ok) throw Error("cannot write '" + path + "'");
}

/// Starts `ktrain __keeper DIR` in its own session, detached from this process
/// (double fork, so it is nobody's zombie), output to DIR/keeper.log, and waits
/// until the keeper says on fd 3 that the nodes have started.
void spawn_keeper(const std::string& ktrain, const std::string& dir) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    throw Error(std::string("cannot start the run: ") + std::strerror(errno));
  }
  const pid_t child = ::fork();
  if (child < 0) throw Error(std::string("cannot start the run: ") + std::strerror(errno));
  if (child == 0) {
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild != 0) ::_exit(grandchild < 0 ? 1 : 0);
    const int log = ::open((dir + "/keeper.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    ::dup2(ready[1], 3);
    const char* argv[] = {ktrain.c_str(), "__keeper", dir.c_str(), nullptr};
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(ready[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  char byte = 0;
  ssize_t n;
  while ((n = ::read(ready[0], &byte, 1)) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  if (n != 1) {
    std::ifstream log(dir + "/keeper.log");
    std::string last, line;
    while (std::getline(log, line)) last = line;
    throw Error("the local run did not start" + (last.empty() ? std::string() : ": " + last));
  }
}

RunSummary summary_of(const LocalRun& run) {
  RunSummary s;
  s.name = run.name;
  s.kind = run.kind;
  s.sweep = run.sweep;
  s.labels = run.labels;
  s.queued = run.queued;
  s.state = run.state;
  s.nodes = run.nodes;
  s.gpus = run.gpus;
  if (auto t = parse_rfc3339(run.created)) s.created = *t;
  return s;
}

/// NAME-2 before NAME-10.
void sort_by_index(std::vector<SweepRun>& runs) {
  std::sort(runs.begin(), runs.end(), [](const SweepRun& a, const SweepRun& b) {
    return before_in_sweep(a.summary.name, b.summary.name);
  });
}

/// A run whose keeper vanished without finishing is reported as failed.
void settle_orphaned(LocalRun& run) {
  // A Pending run without a keeper pid is being started: its keeper writes the pid.
  const bool starting = run.state == RunState::kPending && run.keeper_pid <= 0;
  if ((run.state == RunState::kRunning || run.state == RunState::kPending) && !run.queued &&
      !starting && !process_alive(run.keeper_pid)) {
    run.state = RunState::kFailed;
    if (run.reason.empty()) run.reason = "the local run's keeper process is gone";
  }
}

/// One line of node-<i>.log: "<time> <text>".
struct NodeLine {
  std::string timestamp;
  std::string text;
};

NodeLine split_node_line(const std::string& raw) {
  const auto sp = raw.find(' ');
  if (sp == std::string::npos) return {"", raw};
  return {raw.substr(0, sp), raw.substr(sp + 1)};
}

/// Whether a launcher line belongs to global rank `rank` ("[rank N] ...").
bool line_has_rank(const std::string& text, int rank) {
  const std::string prefix = "[rank " + std::to_string(rank) + "]";
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

LocalPrograms find_local_programs(const Env& env) {
  LocalPrograms p;
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  p.ktrain = ec ? "ktrain" : self.string();
  if (auto l = env.var("KTRAIN_LAUNCH_PATH"); l && !l->empty()) {
    p.launcher = *l;
  } else {
    p.launcher = (self.parent_path() / "ktrain-launch").string();
  }
  if (!fs::exists(p.launcher, ec)) {
    throw Error("cannot find ktrain-launch at '" + p.launcher +
                "': install it beside ktrain, or set KTRAIN_LAUNCH_PATH");
  }
  return p;
}

LocalBackend::LocalBackend(Env& env, LocalPrograms programs)
    : env_(env), programs_(std::move(programs)), root_(local_runs_root(env)) {}

std::string LocalBackend::run_dir(const std::string& run) const {
  return root_ + "/" + run;
}

bool LocalBackend::has_run(const std::string& run) const {
  std::error_code ec;
  return !run.empty() && run.find('/') == std::string::npos &&
         fs::exists(run_dir(run) + "/run.json", ec);
}

SubmitResult LocalBackend::submit(const project::Project& project, const SubmitOptions& opts) {
  if (!project.train) throw UsageError("the project has no `train` section: nothing to run");
  const auto& train = *project.train;
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error("cannot create '" + root_ + "': " + ec.message());

  const std::string base =
      project.name + "-" + (opts.run_id.empty() ? random_run_id() : opts.run_id);
  // A volume marked `checkpoint: true` is, on this machine, a folder per project in the
  // state folder: kept across runs, as a claim is.
  std::string checkpoints;
  if (!project::checkpoint_dir(train.volumes).empty()) {
    checkpoints = (fs::path(root_).parent_path() / "checkpoints" / project.name).string();
    fs::create_directories(checkpoints, ec);
    if (ec) throw Error("cannot create '" + checkpoints + "': " + ec.message());
  }
  SubmitResult result;
  const auto points = project::sweep_points(train);
  const std::size_t total = points.size();
  for (const auto& point : points) {
    LocalRun run;
    run.name = project::sweep_run_name(base, point);
    if (point.index >= 0) run.sweep = base;
    run.project = project.name;
    const auto labels = render::detail::common_labels(project, run.name, run.sweep);
    for (const auto& [k, v] : labels.items()) run.labels[k] = v.template get<std::string>();
    run.directory = project.directory;
    run.launcher = programs_.launcher;
    run.command = project::substitute_params(train.command, point.params);
    run.env = train.env;
    if (!checkpoints.empty()) {
      // Before the project's env, which may name another folder.
      run.env.insert(run.env.begin(), {"KTRAIN_CHECKPOINT_DIR", checkpoints});
    }
    if (train.watchdog_s > 0) {
      run.env.insert(run.env.begin(),
                     {"KTRAIN_WATCHDOG_TIMEOUT", std::to_string(train.watchdog_s)});
    }
    for (const auto& [k, v] : point.params) run.env.emplace_back(project::param_env_name(k), v);
    run.params = point.params;
    // Beyond train.sweep.parallel, a run waits: recorded, not started.
    run.queued = train.sweep_parallel > 0 && point.index >= train.sweep_parallel;
    run.framework = train.framework;
    run.preflight = train.gpus > 0 ? train.preflight : "off";
    run.nodes = train.nodes;
    if (train.min_nodes > 0 && point.index <= 0) {
      env_.warn("elastic nodes " + std::to_string(train.min_nodes) + ".." +
                std::to_string(train.nodes) + " run here as " + std::to_string(train.nodes) +
                " nodes of ktrain-launch's own rendezvous (torchrun's elastic agent is the "
                "PyTorchJob's)");
    }
    run.gpus = train.gpus;
    run.grace_s = static_cast<int>(std::min<std::int64_t>(train.grace_period_s, 3600));
    run.nproc =
        train.processes_per_node > 0 ? train.processes_per_node : (train.gpus > 0 ? train.gpus : 1);
    run.created = format_rfc3339_nanos(env_.clock->now());
    const std::string dir = run_dir(run.name);
    if (!fs::create_directory(dir, ec)) {
      throw Error("cannot create the run folder '" + dir +
                  "': " + (ec ? ec.message() : "a run with this name exists already"));
    }
    write_private_file(dir + "/secret", random_hex(32) + "\n");
    write_local_run(dir, run);
    if (!run.queued) start_keeper(dir, run);
    result.runs.push_back(run.name);
    result.objects.push_back("localrun/" + run.name);
    if (opts.progress) opts.progress(result.runs.size(), total);
  }
  return result;
}

void LocalBackend::start_keeper(const std::string& dir, LocalRun& run) {
  try {
    spawn_keeper(programs_.ktrain, dir);
  } catch (const Error& e) {
    // Recorded, so that the run does not stay Pending without a keeper.
    run.state = RunState::kFailed;
    run.reason = e.what();
    write_local_run(dir, run);
    throw;
  }
}

std::vector<RunSummary> LocalBackend::list(const ListFilter& filter) {
  std::vector<RunSummary> runs;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return runs;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (!fs::exists(entry.path() / "run.json", ec)) continue;
    try {
      LocalRun run = read_local_run(entry.path().string());
      settle_orphaned(run);
      if (!filter.sweep.empty() && run.sweep != filter.sweep) continue;
      // Runs recorded before labels were kept have those ktrain sets on every run.
      if (run.labels.empty()) run.labels = {{"ktrain.dev/run", run.name}};
      if (!filter.selector.matches(run.labels)) continue;
      runs.push_back(summary_of(run));
    } catch (const Error& e) {
      env_.warn(e.what());
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    return a.created != b.created ? a.created > b.created : a.name < b.name;
  });
  return runs;
}

RunStatus LocalBackend::status(const std::string& name) {
  if (!has_run(name)) throw Error("run \"" + name + "\" not found among local runs");
  LocalRun run = read_local_run(run_dir(name));
  settle_orphaned(run);
  RunStatus st;
  st.summary = summary_of(run);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  for (int i = 0; i < run.nodes; ++i) {
    RankStatus r;
    r.index = i;
    r.pod = "node-" + std::to_string(i);
    r.node = host;
    if (static_cast<size_t>(i) < run.node_status.size()) {
      const auto& n = run.node_status[static_cast<size_t>(i)];
      if (n.exit_code) {
        r.exit_code = n.exit_code;
        r.phase = *n.exit_code == 0 ? "Succeeded" : "Failed";
        if (*n.exit_code != 0) r.reason = "Error";
      } else if (n.signal) {
        r.exit_code = 128 + *n.signal;
        r.phase = "Failed";
        r.reason = "Killed";
      } else {
        r.phase = run.state == RunState::kFailed ? "Failed" : "Running";
      }
      r.message = n.cause;
      if (auto t = parse_rfc3339(n.started); t && (!st.started || *t < *st.started)) st.started = t;
      if (auto t = parse_rfc3339(n.finished); t && (!st.finished || *t > *st.finished)) {
        st.finished = t;
      }
    } else {
      r.phase = "Pending";
    }
    if (run.state == RunState::kStopped) {
      r.phase = "Stopped";  // its exit code is the one it stopped with
      r.reason.clear();
      r.message.clear();
    }
    st.ranks.push_back(std::move(r));
  }
  // The checkpoint a resume starts from, as the launcher chooses it.
  for (const auto& [k, v] : run.env) {
    if (k != "KTRAIN_CHECKPOINT_DIR") continue;
    if (auto c = launch::latest_checkpoint(v)) {
      st.checkpoint = c->path;
      st.checkpoint_written = std::chrono::system_clock::from_time_t(c->mtime_unix);
    } else {
      st.checkpoint_note = "none yet in " + v;
    }
    break;
  }
  if (run.state == RunState::kSucceeded) st.conditions.push_back("Complete");
  if (run.state == RunState::kFailed) {
    st.first_failed = run.first_failed;
    st.conditions.push_back("Failed");
    if (!run.reason.empty()) st.explanations.push_back(run.reason);
  }
  if (run.queued) {
    st.explanations.push_back(
        "waits for a place in its sweep (train.sweep.parallel): 'ktrain submit' starts it when "
        "another run of the sweep ends; 'ktrain resume " +
        name + "' starts it now");
  }
  if (run.state == RunState::kStopped) {
    st.explanations.push_back(
        "stopped by 'ktrain stop': its processes are gone, its status and "
        "logs are kept; 'ktrain resume " +
        name + "' starts it again");
  }
  if (run.state != RunState::kSucceeded && run.state != RunState::kFailed) st.finished.reset();
  return st;
}

void LocalBackend::logs(const std::string& name, const LogOptions& opts, const LogSink& sink) {
  if (!has_run(name)) throw Error("run \"" + name + "\" not found among local runs");
  const std::string dir = run_dir(name);
  LocalRun run = read_local_run(dir);
  if (opts.previous) throw UsageError("--previous: local runs are never restarted");

  std::vector<int> nodes;
  if (opts.rank) {
    const int world = run.nodes * run.nproc;
    if (*opts.rank < 0 || *opts.rank >= world) {
      throw UsageError("--rank " + std::to_string(*opts.rank) + ": run \"" + name +
                       "\" has ranks 0.." + std::to_string(world - 1));
    }
    nodes.push_back(*opts.rank / run.nproc);
  } else if (opts.node) {
    if (*opts.node < 0 || *opts.node >= run.nodes) {
      throw UsageError("--node " + std::to_string(*opts.node) + ": run \"" + name +
                       "\" has nodes 0.." + std::to_string(run.nodes - 1));
    }
    nodes.push_back(*opts.node);
  } else {
    for (int i = 0; i < run.nodes; ++i) nodes.push_back(i);
  }
  const std::string since = opts.since ? format_rfc3339_nanos(*opts.since) : std::string();
  auto keep = [&](const NodeLine& l) {
    if (!since.empty() && l.timestamp < since) return false;
    return !opts.rank || line_has_rank(l.text, *opts.rank);
  };

  // What is there now, merged across nodes in time order (tail applies per node).
  struct Reader {
    int node;
    std::ifstream in;
    std::string partial;
  };
  std::vector<Reader> readers;
  std::vector<std::pair<NodeLine, int>> backlog;
  for (int node : nodes) {
    Reader r{node, std::ifstream(dir + "/node-" + std::to_string(node) + ".log"), ""};
    std::deque<NodeLine> lines;
    std::string raw;
    while (r.in.good() && r.in.peek() != EOF && std::getline(r.in, raw)) {
      if (r.in.eof()) {  // no newline yet: the keeper is mid-line
        r.partial = raw;
        break;
      }
      NodeLine l = split_node_line(raw);
      if (!keep(l)) continue;
      lines.push_back(std::move(l));
      if (opts.tail && static_cast<int>(lines.size()) > *opts.tail) lines.pop_front();
    }
    r.in.clear();
    for (auto& l : lines) backlog.emplace_back(std::move(l), node);
    readers.push_back(std::move(r));
  }
  std::stable_sort(backlog.begin(), backlog.end(), [](const auto& a, const auto& b) {
    return a.first.timestamp < b.first.timestamp;
  });
  for (const auto& [l, node] : backlog) {
    if (!sink(LogLine{node, l.text, l.timestamp})) return;
  }
  if (!opts.follow) return;

  // Follow: read what the keeper appends until the run has ended and all is read, or
  // until cancelled (then after one more read of what the nodes have written).
  for (;;) {
    const bool cancelled = opts.cancelled && opts.cancelled();
    bool finished = false;
    try {
      LocalRun now = read_local_run(dir);
      settle_orphaned(now);
      finished = now.state == RunState::kSucceeded || now.state == RunState::kFailed;
    } catch (const Error&) {
      throw Error("run \"" + name + "\" was deleted while its logs were followed");
    }
    bool got = false;
    for (auto& r : readers) {
      if (!r.in.is_open()) r.in.open(dir + "/node-" + std::to_string(r.node) + ".log");
      std::string chunk;
      while (std::getline(r.in, chunk)) {
        if (r.in.eof()) {
          r.partial += chunk;
          break;
        }
        NodeLine l = split_node_line(r.partial + chunk);
        r.partial.clear();
        got = true;
        if (keep(l) && !sink(LogLine{r.node, l.text, l.timestamp})) return;
      }
      r.in.clear();
    }
    if (got && opts.flush) opts.flush();
    if (cancelled || (finished && !got)) return;
    if (!got) env_.clock->sleep_for(std::chrono::milliseconds(100));
  }
}

void LocalBackend::remove(const std::string& name) {
  if (!has_run(name)) throw Error("run \"" + name + "\" not found among local runs");
  const std::string dir = run_dir(name);
  LocalRun run = read_local_run(dir);
  if (process_alive(run.keeper_pid) &&
      (run.state == RunState::kRunning || run.state == RunState::kPending)) {
    ::kill(run.keeper_pid, SIGTERM);
    // The keeper stops the nodes (SIGTERM, then SIGKILL after its grace) and exits.
    const auto wait = std::chrono::seconds(run.grace_s + 15);
    const auto deadline = env_.clock->steady_now() + wait;
    bool stopped = false;
    while (!stopped && env_.clock->steady_now() < deadline) {
      const RunState s = read_local_run(dir).state;
      stopped =
          !process_alive(run.keeper_pid) || s == RunState::kFailed || s == RunState::kSucceeded;
      if (!stopped) env_.clock->sleep_for(std::chrono::milliseconds(50));
    }
    if (!stopped) {
      throw Error("run \"" + name + "\" did not stop within " + std::to_string(wait.count()) +
                  "s; its keeper is process " + std::to_string(run.keeper_pid));
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) throw Error("cannot remove '" + dir + "': " + ec.message());
}

std::vector<SweepRun> LocalBackend::sweep_runs(const std::string& sweep) {
  std::vector<SweepRun> out;
  ListFilter filter;
  filter.sweep = sweep;
  for (const auto& summary : list(filter)) {
    LocalRun run;
    try {
      run = read_local_run(run_dir(summary.name));
    } catch (const Error&) {
      continue;  // deleted meanwhile
    }
    SweepRun sr;
    sr.summary = summary;
    sr.params = run.params;
    for (const auto& n : run.node_status) {
      auto s = parse_rfc3339(n.started);
      if (s && (!sr.started || *s < *sr.started)) sr.started = s;
      auto f = parse_rfc3339(n.finished);
      if (f && (!sr.finished || *f > *sr.finished)) sr.finished = f;
    }
    if (summary.state == RunState::kSucceeded) {
      sr.exit_code = 0;
    } else if (summary.state == RunState::kFailed && run.first_failed >= 0 &&
               run.first_failed < static_cast<int>(run.node_status.size())) {
      sr.exit_code = run.node_status[static_cast<size_t>(run.first_failed)].exit_code;
    }
    if (summary.state != RunState::kSucceeded && summary.state != RunState::kFailed) {
      sr.finished.reset();
    }
    out.push_back(std::move(sr));
  }
  sort_by_index(out);
  return out;
}

bool LocalBackend::stop(const std::string& name) {
  if (!has_run(name)) throw Error("run \"" + name + "\" not found among local runs");
  const std::string dir = run_dir(name);
  LocalRun run = read_local_run(dir);
  settle_orphaned(run);
  if (run.state == RunState::kStopped) return false;
  if (run.state == RunState::kSucceeded || run.state == RunState::kFailed) {
    throw Error("run \"" + name + "\" has ended (" + to_string(run.state) + "): nothing to stop");
  }
  if (run.queued) {  // not started: it no longer waits
    run.queued = false;
    run.state = RunState::kStopped;
    run.reason = "stopped by 'ktrain stop'";
    write_local_run(dir, run);
    return true;
  }
  // The keeper stops the nodes (SIGTERM, then SIGKILL after its grace) and, finding the
  // file `stop`, records the run as stopped rather than failed.
  write_private_file(dir + "/stop", format_rfc3339(env_.clock->now()) + "\n");
  ::kill(run.keeper_pid, SIGTERM);
  const auto wait = std::chrono::seconds(run.grace_s + 15);
  const auto deadline = env_.clock->steady_now() + wait;
  while (env_.clock->steady_now() < deadline) {
    const LocalRun now = read_local_run(dir);
    if (now.state == RunState::kStopped) return true;
    if (!process_alive(run.keeper_pid)) break;
    env_.clock->sleep_for(std::chrono::milliseconds(50));
  }
  LocalRun now = read_local_run(dir);
  if (now.state != RunState::kStopped && !process_alive(run.keeper_pid)) {
    // The keeper ended before it saw the signal (the run had just finished), or is gone.
    if (now.state == RunState::kSucceeded || now.state == RunState::kFailed) {
      std::error_code ec;
      fs::remove(dir + "/stop", ec);
      throw Error("run \"" + name + "\" ended (" + to_string(now.state) +
                  ") before it could be stopped");
    }
    now.state = RunState::kStopped;
    now.reason = "stopped by 'ktrain stop'";
    write_local_run(dir, now);
    return true;
  }
  if (now.state != RunState::kStopped) {
    throw Error("run \"" + name + "\" did not stop within " + std::to_string(wait.count()) +
                "s; its keeper is process " + std::to_string(run.keeper_pid));
  }
  return true;
}

bool LocalBackend::resume(const std::string& name) {
  if (!has_run(name)) throw Error("run \"" + name + "\" not found among local runs");
  const std::string dir = run_dir(name);
  LocalRun run = read_local_run(dir);
  settle_orphaned(run);
  if (run.state == RunState::kSucceeded || run.state == RunState::kFailed) {
    throw Error("run \"" + name + "\" has ended (" + to_string(run.state) +
                "): nothing to resume; 'ktrain submit' starts a new run");
  }
  if (run.state != RunState::kStopped && !run.queued) return false;
  std::error_code ec;
  fs::remove(dir + "/stop", ec);
  run.queued = false;
  // A new keeper starts every node again; their logs go on in the same files.
  run.state = RunState::kPending;
  run.reason.clear();
  run.first_failed = -1;
  run.node_status.clear();
  run.keeper_pid = 0;  // the old keeper's pid would make it look orphaned
  write_local_run(dir, run);
  start_keeper(dir, run);
  return true;
}

void LocalBackend::watch_list(const ListFilter& filter,
                              const std::function<bool(const std::vector<RunSummary>&)>& on_change,
                              const std::function<bool()>& cancelled) {
  // Local runs are files: read again every 500 ms, passed on when something changed.
  std::optional<std::string> last;
  while (!(cancelled && cancelled())) {
    auto runs = list(filter);
    std::string fp;
    for (const auto& r : runs) fp += r.name + "/" + to_string(r.state) + "\n";
    if (fp != last) {
      last = std::move(fp);
      if (!on_change(runs)) return;
    }
    env_.clock->sleep_for(std::chrono::milliseconds(500));
  }
}

void LocalBackend::watch_status(const std::string& run, const StatusCallback& on_change,
                                const std::function<bool()>& cancelled) {
  std::string last;
  while (!(cancelled && cancelled())) {
    RunStatus st = status(run);
    std::string fp = status_fingerprint(st);
    if (fp != last) {
      last = std::move(fp);
      if (!on_change(st)) return;
    }
    if (st.summary.state == RunState::kSucceeded || st.summary.state == RunState::kFailed) return;
    env_.clock->sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace ktrain::backend

namespace ktrain::backend {

ServeResult LocalBackend::serve(const project::Project& project, const ServeOptions& opts) {
  if (!project.serve) {
    throw UsageError(project.file +
                     ": there is no serve section (use 'ktrain submit' for training)");
  }
  const auto& sv = *project.serve;
  if (opts.dry_run_server) {
    throw UsageError("--dry-run=server asks a cluster; it cannot be combined with --local");
  }
  if (sv.target != "deployment") {
    throw UsageError("serve.target " + sv.target +
                     ": its operator serves it on a cluster; on this machine ktrain runs "
                     "serve.command as one process (serve.target deployment)");
  }
  if (sv.command.empty()) {
    throw UsageError(project.file +
                     ": serve.command is empty: on this machine ktrain runs serve.command "
                     "(the image's entrypoint runs only in a container)");
  }
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error("cannot create '" + root_ + "': " + ec.message());
  // A service is named after its project, as its Deployment is. Serving again leaves a
  // running one as it is (as an apply that changes nothing); one that has ended is
  // started anew.
  const std::string name = project.name;
  const std::string dir = run_dir(name);
  ServeResult result;
  result.objects.push_back("localservice/" + name);
  bool running = false;
  if (has_run(name)) {
    LocalRun old = read_local_run(dir);
    settle_orphaned(old);
    if (old.kind != "serve") {
      throw Error("serving " + name + ": a local run named \"" + name +
                  "\" exists ('ktrain delete " + name + "' removes it)");
    }
    running = old.state == RunState::kRunning || old.state == RunState::kPending;
    if (!running) {
      fs::remove_all(dir, ec);
      if (ec) throw Error("cannot remove '" + dir + "': " + ec.message());
    }
  }
  const int port = sv.readiness && sv.readiness->port ? sv.readiness->port : sv.port;
  if (!running) {
    LocalRun run;
    run.name = name;
    run.kind = "serve";
    run.port = sv.port;
    run.project = project.name;
    const auto labels = render::detail::common_labels(project, name, "");
    for (const auto& [k, v] : labels.items()) run.labels[k] = v.template get<std::string>();
    run.directory = project.directory;
    run.launcher = programs_.launcher;
    run.command = sv.command;
    run.env = sv.env;
    run.framework = "none";
    run.preflight = "off";
    run.nodes = 1;
    run.nproc = 1;
    run.gpus = sv.gpus;
    run.created = format_rfc3339_nanos(env_.clock->now());
    if (!fs::create_directory(dir, ec)) {
      throw Error("cannot create the service folder '" + dir + "': " + ec.message());
    }
    write_private_file(dir + "/secret", random_hex(32) + "\n");
    write_local_run(dir, run);
    start_keeper(dir, run);
  }
  if (!opts.wait) return result;

  // Ready when it answers: the readiness path with a 2xx or 3xx, else any HTTP answer.
  result.waited = true;
  const std::string path = sv.readiness ? sv.readiness->path : "/";
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  const std::string waiting = "Waiting for " + name + " to answer on " + url;
  if (opts.progress) opts.progress(waiting);
  net::CurlTransport http;
  const auto deadline = env_.clock->steady_now() + opts.timeout;
  while (true) {
    LocalRun run = read_local_run(dir);
    settle_orphaned(run);
    if (run.state == RunState::kFailed || run.state == RunState::kSucceeded ||
        run.state == RunState::kStopped) {
      std::string last;
      LogOptions lo;
      lo.tail = 10;
      logs(name, lo, [&last](const LogLine& l) {
        last += "\n  " + l.text;
        return true;
      });
      throw Error("serving " + name + ": serve.command ended (" + to_string(run.state) +
                  (run.reason.empty() ? "" : ": " + run.reason) + ") before it answered" +
                  (last.empty() ? "" : "; its last lines:" + last));
    }
    net::Request req;
    req.method = "GET";
    req.url = url;
    req.timeout = std::chrono::milliseconds(2000);
    const auto resp = http.perform(req);
    const bool answered = resp.failure == net::TransportFailure::kNone && resp.status > 0;
    if (answered && (!sv.readiness || (resp.status >= 200 && resp.status < 400))) {
      result.ready = true;
      result.message = "serving on http://127.0.0.1:" + std::to_string(sv.port) + " (pid " +
                       std::to_string(run.node_status.empty() ? 0 : run.node_status[0].pid) + ")";
      return result;
    }
    if (env_.clock->steady_now() >= deadline) {
      result.message =
          waiting + (answered ? " (it answers " + std::to_string(resp.status) + ")" : "");
      return result;
    }
    env_.clock->sleep_for(std::chrono::milliseconds(200));
  }
}

ScaleResult LocalBackend::scale(const ScaleRequest& req) {
  if (has_run(req.name) && read_local_run(run_dir(req.name)).kind == "serve") {
    throw UsageError("scale " + req.name +
                     ": a local service is one process on this machine; its replicas are "
                     "scaled on a cluster");
  }
  throw Error("scale " + req.name + ": no local service of that name (see 'ktrain list --local')");
}

nlohmann::ordered_json LocalBackend::server_version() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return {{"server", std::string("local: ") + host + " (" + programs_.launcher + ")"}};
}

}  // namespace ktrain::backend
