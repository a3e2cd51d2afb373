#include "cmd/dev.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "backend/kube_backend.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/random.h"
#include "base/timefmt.h"
#include "cmd/built_image.h"
#include "cmd/exec.h"
#include "cmd/pod_target.h"
#include "cmd/port_forward.h"
#include "cmd/project_flags.h"
#include "cmd/run_common.h"
#include "kube/run_state.h"
#include "kube/streams.h"
#include "render/dev.h"
#include "render/yaml_json.h"

namespace ktrain::cmd {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

/// The port JupyterLab listens on in the pod, and the local one by default.
constexpr int kJupyterPort = 8888;

/// The shell of --shell: bash where the image has it, else sh.
const std::vector<std::string> kShell = {
    "/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh"};

/// Starts JupyterLab in the pod, in the background, unless it runs already ($1: the
/// token, $2: the port). Prints "started PORT TOKEN" or "running PORT TOKEN" (the
/// one that runs, started by an earlier --jupyter) once it listens; exit 127 when the
/// image has no jupyter, 1 when it does not start (its log's last lines on stderr).
constexpr const char* kJupyterScript = R"SH(token=$1 port=$2
d=${TMPDIR:-/tmp}/ktrain-jupyter
if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
  printf 'running %s %s\n' "$(cat "$d/port")" "$(cat "$d/token")"
  exit 0
fi
if ! command -v jupyter >/dev/null 2>&1; then
  echo "the image has no jupyter on its PATH ($PATH): install JupyterLab in it (pip install jupyterlab)" >&2
  exit 127
fi
mkdir -p "$d" && chmod 700 "$d" || exit 1
printf %s "$token" >"$d/token"
printf %s "$port" >"$d/port"
nohup jupyter lab --no-browser --ip=127.0.0.1 --port="$port" --port-retries=0 --allow-root \
  --ServerApp.token="$token" >"$d/log" 2>&1 </dev/null &
echo $! >"$d/pid"
i=0
while [ $i -lt 240 ]; do
  if ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
    echo "JupyterLab ended as it started; the end of its log ($d/log):" >&2
    tail -n 20 "$d/log" >&2
    rm -f "$d/pid"
    exit 1
  fi
  if grep -q "127.0.0.1:$port/" "$d/log" 2>/dev/null; then
    printf 'started %s %s\n' "$port" "$token"
    exit 0
  fi
  sleep 0.25
  i=$((i + 1))
done
echo "JupyterLab did not start within 60s; the end of its log ($d/log):" >&2
tail -n 20 "$d/log" >&2
exit 1
)SH";

/// A file that an exec's output goes to, read back at the end.
class Capture {
 public:
  Capture() : f_(std::tmpfile()) {
    if (!f_) throw Error("cannot make a temporary file for a command's output");
  }
  ~Capture() { std::fclose(f_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  int fd() const { return ::fileno(f_); }
  std::string text() const {
    std::string s;
    std::rewind(f_);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f_)) > 0) s.append(buf, n);
    return s;
  }

 private:
  std::FILE* f_;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

struct DevOptions {
  ProjectFlags project_flags;
  TargetFlags target;
  bool shell = false;
  bool jupyter = false;
  bool stop = false;
  std::string idle_timeout = "1h";
  int gpus = -1;
  int port = -1;  ///< --port; -1: 8888 when it is free, else any free port
  std::string address = "127.0.0.1";
  std::string timeout = "10m";
  std::string dry_run;        ///< "", "client" or "server"
  std::string push_launcher;  ///< --push-launcher: where the launcher image goes
  std::vector<std::string> insecure_registries;
  std::string output;

  render::DevSettings settings;
  std::chrono::seconds wait_timeout{600};

  void validate() {
    if (shell + jupyter + stop > 1) {
      throw UsageError("--shell, --jupyter and --stop are each a command of their own: use one");
    }
    if (idle_timeout == "0" || idle_timeout == "never") {
      settings.idle_timeout_s = 0;
    } else {
      auto s = parse_duration_seconds(idle_timeout);
      if (!s || *s < 0) {
        throw UsageError("--idle-timeout " + idle_timeout +
                         ": expected a duration like 30m or 2h, or 0 for never");
      }
      settings.idle_timeout_s = *s;
    }
    if (gpus < -1) throw UsageError("--gpus takes a number >= 0");
    settings.gpus = gpus;
    if (port != -1 && (port < 0 || port > 65535)) {
      throw UsageError("--port " + std::to_string(port) + ": expected 0 (any free port) to 65535");
    }
    if (port != -1 && !jupyter) throw UsageError("--port is for --jupyter");
    if (address != "127.0.0.1" && !jupyter) throw UsageError("--address is for --jupyter");
    check_address(address);
    wait_timeout = parse_timeout_flag("--timeout", timeout);
    if (dry_run == "none") dry_run.clear();
    if (!dry_run.empty() && dry_run != "client" && dry_run != "server") {
      throw UsageError("--dry-run=" + dry_run + ": expected client, server or none");
    }
    if (!dry_run.empty() && (shell || jupyter || stop)) {
      throw UsageError("--dry-run shows the dev pod's objects; it cannot be combined with " +
                       std::string(shell     ? "--shell"
                                   : jupyter ? "--jupyter"
                                             : "--stop"));
    }
    if (!output.empty() && output != "name" && output != "json" && output != "yaml") {
      throw UsageError("-o " + output + ": dev prints name, json or yaml");
    }
    if (!push_launcher.empty()) check_push_launcher_flag(push_launcher);
    if (push_launcher.empty() && !insecure_registries.empty()) {
      throw UsageError("--insecure-registry is for --push-launcher");
    }
    if (target.local) {
      throw UsageError(
          "ktrain dev makes a pod on a cluster; --local has none (ktrain submit --local runs "
          "the job on this machine)");
    }
  }

  int run(Env& env) {
    project::Project project = project_flags.load(env);
    use_built_image(env, project, dry_run != "client");
    // The dev pod goes where the project's runs go: -n, else its namespace, else the
    // context's; the verbs below look there too.
    if (env.global.namespace_.empty()) env.global.namespace_ = project.namespace_;
    if (dry_run == "client") {
      provide_launcher_image(env, project, launcher_push(false));
      render::Rendered r = render::render_dev(project, settings, {});
      for (const auto& w : r.warnings) env.warn(w);
      const auto& objects = r.objects;
      if (output == "json") {
        ordered_json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
        *env.out << list.dump(2) << "\n";
      } else {
        *env.out << render::to_yaml(objects);
      }
      return exit_code::kOk;
    }
    if (auto l = env.var("KTRAIN_LOCAL"); l && *l == "1") {
      throw UsageError("ktrain dev makes a pod on a cluster; KTRAIN_LOCAL=1 asks for this machine");
    }
    const std::string run = render::dev_run_name(project);
    auto be_owned = open_backend(env, target);
    auto& be = dynamic_cast<backend::KubeBackend&>(*be_owned);
    kube::Client& client = be.client();
    const std::string ns = be.namespace_for(project);
    if (stop) return stop_dev(env, be, run, ns);

    if (dry_run == "server") {
      const auto refs = create(env, be, project, ns, true);
      if (output == "name") {
        for (const auto& ref : refs) *env.out << ref << "\n";
      } else {
        say(env, "the API server accepts the dev pod " + run + " (" + std::to_string(refs.size()) +
                     " objects; nothing was kept)");
      }
      return exit_code::kOk;
    }

    bool created = false;
    auto job = dev_job(client, ns, run);
    if (job) {
      const RunSummary s = kube::summarize_job(*job);
      if (s.state == RunState::kStopped) {
        throw Error("the dev pod " + run + " is stopped (ktrain stop): ktrain resume " + run +
                    " starts it again; ktrain dev --stop removes it");
      }
      if (s.state == RunState::kSucceeded || s.state == RunState::kFailed) {
        say(env, "the dev pod " + run + " has ended (" + to_string(s.state) + "; ktrain logs " +
                     run + " says why): starting a new one");
        remove_and_wait(be, run, ns);
        job.reset();
      } else {
        say(env, "using the dev pod " + run + " started " +
                     format_age(env.clock->now() - s.created) +
                     " ago (ktrain dev --stop, then ktrain dev, starts one from the project as "
                     "it is now)");
        const std::string image = image_of(*job);
        const std::string wanted = render::image_to_run(project, {});
        if (!image.empty() && image != wanted) {
          env.warn("the dev pod runs " + image + "; the project now says " + wanted);
        }
      }
    }
    if (!job) {
      create(env, be, project, ns, false);
      created = true;
      say(env, "created the dev pod " + run + " in namespace " + ns + describe_idle());
    }

    const std::string pod = wait_running(env, be, run);
    PodTarget t = resolve_pod(env, client, run, PodChoice{});
    if (shell) return exec_in(env, client, t, kShell, true, ::isatty(0) != 0);
    if (jupyter) return start_jupyter(env, client, t, run);

    if (output == "json" || output == "yaml") {
      ordered_json j;
      j["run"] = run;
      j["namespace"] = ns;
      j["pod"] = pod;
      j["created"] = created;
      j["idle_timeout_seconds"] = settings.idle_timeout_s;
      print_document(env, j, output);
    } else {
      *env.out << run << "\n";
      say(env, "pod " + pod + " is running. A shell: ktrain dev --shell" +
                   (project_flags.file == "ktrain.yaml" ? "" : " -f " + project_flags.file) +
                   "; JupyterLab: ktrain dev --jupyter; a command: ktrain exec " + run +
                   " -- CMD; its end: ktrain dev --stop");
    }
    return exit_code::kOk;
  }

  /// Renders the dev pod's objects and applies them (`server_dry_run`: validated by the
  /// server, nothing kept); returns their refs.
  std::vector<std::string> create(Env& env, backend::KubeBackend& be, project::Project& project,
                                  const std::string& ns, bool server_dry_run) {
    // The pod has the launcher as runs do (ktrain-launch -- CMD spawns one worker per
    // GPU in it): an image without it gets it from the launcher image.
    provide_launcher_image(env, project, launcher_push(!server_dry_run));
    fill_cuda_from_image(env, project, {});
    render::RenderOptions ro;
    ro.kube_version = be.kube_version();  // the API server's release
    render::Rendered r = render::render_dev(project, settings, ro);
    for (const auto& w : r.warnings) env.warn(w);
    for (auto& o : r.objects) {
      if (o["metadata"].is_object() && !o["metadata"].contains("namespace")) {
        o["metadata"]["namespace"] = ns;
      }
    }
    const auto objects = backend::with_rendezvous_secrets(std::move(r.objects));
    try {
      return be.apply_objects(objects, server_dry_run);
    } catch (const Error& e) {
      throw e.wrapped(server_dry_run ? "creating the dev pod (server dry run)"
                                     : "creating the dev pod");
    }
  }

  LauncherPush launcher_push(bool push) const {
    LauncherPush how;
    how.to = push_launcher;
    how.push = push;
    how.insecure_registries = insecure_registries;
    how.verb = "dev";
    return how;
  }

  std::string describe_idle() const {
    if (settings.idle_timeout_s == 0) return " (no idle timeout: it runs until ktrain dev --stop)";
    return " (it ends after " + format_duration(settings.idle_timeout_s) +
           " with nothing running in it: --idle-timeout)";
  }

  static std::string image_of(const json& job) {
    const json* c = kube::train_container_spec(job["spec"]["template"]["spec"]);
    return c ? c->value("image", "") : "";
  }

  static std::string dev_job_path(const std::string& ns, const std::string& run) {
    return kube::object_path(kube::resource_type("batch/v1", "Job"), ns, run);
  }

  /// The dev pod's Job, if there is one; throws Error when the Job of that name is not a
  /// dev pod's (a run submitted with --run-id dev), which dev neither uses nor deletes.
  static std::optional<json> dev_job(kube::Client& client, const std::string& ns,
                                     const std::string& run) {
    auto job = client.get_if_exists(dev_job_path(ns, run));
    if (job) {
      const auto labels = (*job)["metadata"].value("labels", json::object());
      if (labels.value(render::kLabelDev, "") != "true") {
        throw Error("there is a run " + run + " in namespace " + ns +
                    " that is not a dev pod (submitted with --run-id dev?); ktrain delete " + run +
                    " deletes it");
      }
    }
    return job;
  }

  static void say(Env& env, const std::string& line) {
    if (env.global.quiet) return;
    env.out->flush();
    *env.err << "ktrain dev: " << line << "\n";
    env.err->flush();
  }

  int stop_dev(Env& env, backend::KubeBackend& be, const std::string& run, const std::string& ns) {
    const auto job = dev_job(be.client(), ns, run);
    try {
      be.remove(run);
    } catch (const kube::ApiError&) {
      throw;
    } catch (const Error&) {
      if (job) throw;
      throw Error("there is no dev pod " + run + " in namespace " + ns);
    }
    if (output == "name") {
      *env.out << run << "\n";
    } else {
      say(env, "deleted the dev pod " + run);
    }
    return exit_code::kOk;
  }

  /// Removes the ended dev pod's objects and waits until its Job and Service are gone,
  /// so that new ones can be made under the same names. (Its Secret goes at once, and
  /// the Role that ktrain setup makes does not let its users read Secrets.)
  static void remove_and_wait(backend::KubeBackend& be, const std::string& run,
                              const std::string& ns) {
    be.remove(run);
    const auto job_path = dev_job_path(ns, run);
    const auto svc_path = kube::object_path(kube::resource_type("v1", "Service"), ns, run);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (be.client().get_if_exists(job_path) || be.client().get_if_exists(svc_path)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw Error("the ended dev pod " + run + " is still being deleted after 60s; try again");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  /// Waits until node 0's pod runs, watching the run (backend::watch_status); says on
  /// stderr what it waits for, each time that changes. Returns the pod's name. Throws
  /// Error when the pod ends first, and after --timeout (exit 124).
  std::string wait_running(Env& env, backend::KubeBackend& be, const std::string& run) {
    const auto start = std::chrono::steady_clock::now();
    std::string pod, said;
    std::optional<Error> ended;
    be.watch_status(
        run,
        [&](const RunStatus& st) {
          const RankStatus* r = nullptr;
          for (const auto& rank : st.ranks) {
            if (rank.index == 0 && !rank.pod.empty()) r = &rank;  // the newest attempt is last
          }
          if (r && r->phase == "Running") {
            pod = r->pod;
            return false;
          }
          if (st.summary.state == RunState::kSucceeded || st.summary.state == RunState::kFailed) {
            const std::string why = st.explanations.empty() ? "" : ": " + st.explanations.front();
            ended = Error("the dev pod " + run + " ended before it ran (" +
                          to_string(st.summary.state) + why + "); ktrain status " + run +
                          " and ktrain logs " + run + " say more");
            return false;
          }
          std::string now = r ? "pod " + r->pod + " is " + r->phase : "waiting for its pod";
          if (r && !r->reason.empty()) now += " (" + r->reason + ")";
          if (!st.explanations.empty()) now += ": " + st.explanations.front();
          if (now != said) {
            say(env, now);
            said = now;
          }
          return true;
        },
        [&] { return std::chrono::steady_clock::now() - start > wait_timeout; });
    if (!pod.empty()) return pod;
    if (ended) throw *ended;
    throw Error("the dev pod " + run + " is not running after " + timeout + " (" + said +
                    "); it is left as it is: ktrain dev --stop removes it",
                exit_code::kTimeout);
  }

  int start_jupyter(Env& env, kube::Client& client, const PodTarget& t, const std::string& run) {
    const std::string token = random_hex(24);
    kube::ExecRequest req;
    req.ns = t.ns;
    req.pod = t.pod;
    req.container = t.container;
    req.command = {"/bin/sh",        "-c",  kJupyterScript,
                   "ktrain-jupyter", token, std::to_string(kJupyterPort)};
    Capture out, err;
    req.out_fd = out.fd();
    req.err_fd = err.fd();
    say(env, "starting JupyterLab in pod " + t.pod);
    const kube::ExecResult r = kube::exec(client, req);
    const std::string said = trim(out.text());
    const std::string problem = trim(err.text());
    if (r.exit_code != 0 || !r.message.empty()) {
      std::string why = !problem.empty() ? problem : r.message;
      if (why.empty()) why = "exit status " + std::to_string(r.exit_code);
      throw Error("JupyterLab did not start in the dev pod " + run + ": " + why);
    }
    // "started PORT TOKEN" or "running PORT TOKEN".
    std::string how, remote_port, used_token;
    {
      const auto a = said.find(' ');
      const auto b = a == std::string::npos ? a : said.find(' ', a + 1);
      if (b == std::string::npos) {
        throw Error("JupyterLab in the dev pod " + run + " said what was not expected: " + said);
      }
      how = said.substr(0, a);
      remote_port = said.substr(a + 1, b - a - 1);
      used_token = said.substr(b + 1);
    }
    PortPair p;
    try {
      p.remote = std::stoi(remote_port);
    } catch (const std::exception&) {
      throw Error("JupyterLab in the dev pod " + run + " said what was not expected: " + said);
    }
    if (how == "running") say(env, "JupyterLab runs already in the pod (an earlier --jupyter)");
    p.local = port >= 0 ? port : port_free(address, kJupyterPort) ? kJupyterPort : 0;
    const std::string tok = used_token;
    return forward_ports(env, client, t, run, address, {p},
                         [&env, tok](const std::vector<PortPair>& ports) {
                           *env.out << "JupyterLab: http://127.0.0.1:" << ports.front().local
                                    << "/lab?token=" << tok << "\n";
                           say(env,
                               "Ctrl-C ends the forwarding; JupyterLab goes on in the pod, which "
                               "stays busy while it runs (ktrain dev --stop removes the pod)");
                         });
  }
};

}  // namespace

void add_dev_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<DevOptions>();
  auto* sub = app.add_subcommand(
      "dev", "Start (or find) an interactive pod with the project's image, GPUs, volumes and env");
  opts->project_flags.add_to(*sub);
  opts->target.add_to(*sub);
  sub->add_flag("--shell", opts->shell, "Then open a shell in it (bash, else sh)");
  sub->add_flag("--jupyter", opts->jupyter,
                "Then start JupyterLab in it (the image must have it) and forward it to "
                "localhost; prints its URL with the token");
  sub->add_flag("--stop", opts->stop, "Delete the dev pod");
  sub->add_option("--idle-timeout", opts->idle_timeout,
                  "End the pod after this long with nothing running in it (0: never)")
      ->type_name("DURATION")
      ->default_str("1h");
  sub->add_option("--gpus", opts->gpus, "GPUs of the pod (default: train.gpus)")->type_name("N");
  sub->add_option("--port", opts->port,
                  "With --jupyter: the local port (default 8888, or a free one when it is taken)")
      ->type_name("PORT");
  sub->add_option("--address", opts->address,
                  "With --jupyter: the local address to listen on (default 127.0.0.1)");
  sub->add_option("--timeout", opts->timeout, "Give up waiting for the pod to run after this long")
      ->type_name("DURATION")
      ->default_str("10m");
  add_push_launcher_flag(*sub, opts->push_launcher);
  sub->add_option("--insecure-registry", opts->insecure_registries,
                  "With --push-launcher: use plain HTTP for this registry host");
  sub->add_option("--dry-run", opts->dry_run,
                  "client: print the dev pod's objects; server: have the API server check them")
      ->expected(0, 1)
      ->default_str("client")
      ->type_name("client|server|none");
  sub->callback([opts, &env, &result] {
    opts->output = env.global.output;
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
