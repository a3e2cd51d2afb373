#include "cmd/submit.h"

#include <atomic>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include "backend/kube_backend.h"
#include "backend/run_id.h"
#include "base/error.h"
#include "base/image_ref.h"
#include "base/progress.h"
#include "cmd/build.h"
#include "cmd/built_image.h"
#include "cmd/notify.h"
#include "cmd/project_flags.h"
#include "cmd/render.h"
#include "cmd/run_common.h"
#include "render/render.h"
#include "render/yaml_json.h"

namespace ktrain::cmd {

namespace {

/// Progress is shown from this many objects on (a sweep of 100 runs).
constexpr std::size_t kProgressFrom = 300;

/// The sweep a run of a sweep belongs to: its name without the last "-N".
std::string sweep_of(const std::string& run) {
  const size_t dash = run.rfind('-');
  return dash == std::string::npos ? run : run.substr(0, dash);
}

struct SubmitOptions {
  ProjectFlags project_flags;
  TargetFlags target;
  std::string run_id;
  bool wait = false;
  bool follow = false;
  std::string timeout;
  std::string dry_run;  ///< "", "client" or "server"
  bool build = false;   ///< --build: build and push the image first, run its digest
  bool sync = false;    ///< --sync: push the workspace's changes as a layer first, run it
  std::vector<std::string> insecure_registries;
  std::string platform = "linux/amd64";
  std::string push_launcher;  ///< --push-launcher: where the launcher image goes
  std::string on_finish;      ///< --on-finish: a command for each run's end

  std::optional<std::chrono::seconds> timeout_s;

  void validate() {
    if (!run_id.empty() && !backend::is_valid_run_id(run_id)) {
      throw UsageError("--run-id " + run_id + ": expected 1 to 12 characters of a-z and 0-9");
    }
    if (!timeout.empty()) {
      if (!wait && !follow) throw UsageError("--timeout needs --wait or --follow");
      timeout_s = parse_timeout_flag("--timeout", timeout);
    }
    if (!dry_run.empty() && dry_run != "client" && dry_run != "server" && dry_run != "none") {
      throw UsageError("--dry-run=" + dry_run + ": expected client, server or none");
    }
    if (dry_run == "none") dry_run.clear();
    if (!on_finish.empty() && !wait && !follow) {
      throw UsageError("--on-finish runs when a waited-for run ends: add --wait or --follow");
    }
    if (!dry_run.empty() && (wait || follow)) {
      throw UsageError("--dry-run cannot be combined with --wait or --follow");
    }
    if (dry_run == "server" && target.local) {
      throw UsageError(
          "--dry-run=server needs a cluster; --dry-run=client shows what would be sent");
    }
    if (build && target.local) {
      throw UsageError("--build makes an image for a cluster; a --local run uses this machine");
    }
    if (build && dry_run == "client") {
      throw UsageError("--build cannot be combined with --dry-run=client (nothing is pushed then)");
    }
    if (sync && build) {
      throw UsageError(
          "--sync pushes what changed since the last build; --build rebuilds it "
          "all: use one of them");
    }
    if (sync && target.local) {
      throw UsageError("--sync sends the workspace to a cluster; a --local run uses it in place");
    }
    if (sync && dry_run == "client") {
      throw UsageError("--sync cannot be combined with --dry-run=client (nothing is pushed then)");
    }
    if (!build && !sync && push_launcher.empty() && !insecure_registries.empty()) {
      throw UsageError("--insecure-registry is for --build, --sync and --push-launcher");
    }
    if (!push_launcher.empty()) {
      if (target.local) {
        throw UsageError("--push-launcher is for a cluster; a --local run uses this machine's");
      }
      check_push_launcher_flag(push_launcher);
    }
    const auto& o = output_format;
    if (!o.empty() && o != "name" && o != "json" && o != "yaml") {
      throw UsageError("-o " + o + ": submit prints name, json or yaml");
    }
  }

  int run(Env& env) {
    project::Project project = project_flags.load(env);
    const auto local_var = env.var("KTRAIN_LOCAL");
    const bool local = target.local || (local_var && *local_var == "1");
    // train.sync: as --sync, for a cluster run that is not --build and not a client dry run.
    if (project.train && project.train->sync && !build && !local && dry_run != "client") {
      sync = true;
    }
    if (build || sync) {
      if (!project.image.build) {
        throw UsageError(project.file + ": " + (build ? "--build" : "--sync") +
                         " needs image.build in the project file");
      }
      BuildOptions bo;
      bo.project = project_flags;
      bo.platform = platform;
      bo.insecure_registries = insecure_registries;
      bo.sync = sync;
      // The run uses the image by digest: exactly what was built, whatever tags move.
      const oci::BuildResult built = build_image(env, bo);
      project.image.ref = built.reference;
      // What the image needs, as the build recorded it, unless the project says.
      if (!built.cuda.empty()) {
        if (project.train && project.train->cuda.empty()) project.train->cuda = built.cuda;
        if (project.serve && project.serve->cuda.empty()) project.serve->cuda = built.cuda;
      }
    }
    // A cluster's pods run what build pushed (a project never built is refused here,
    // before anything is asked of the cluster); a local run (--local, KTRAIN_LOCAL=1)
    // uses no image.
    if (!build && !sync && !local) use_built_image(env, project, dry_run != "client");
    // An image without ktrain-launch gets it from the launcher image: pushed here when
    // the project names none (ktrain's default is not published); after the cluster is
    // known to be there, pushing nothing on a dry run.
    LauncherPush how;
    how.to = push_launcher;
    how.push = dry_run.empty();
    how.insecure_registries = insecure_registries;
    how.platform = platform;
    if (dry_run == "client") {
      // What would be sent, without contacting anything.
      if (!local) provide_launcher_image(env, project, how);
      render::RenderOptions ro;
      ro.run_id = run_id.empty() ? backend::random_run_id() : run_id;
      render::Rendered r = render::render_project(project, ro);
      for (const auto& w : r.warnings) env.warn(w);
      // As render prints them: the rendezvous Secret and its token are made at submit.
      note_rendezvous_secret(env, project);
      const auto& objects = r.objects;
      if (output_format == "json") {
        nlohmann::ordered_json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
        *env.out << list.dump(2) << "\n";
      } else {
        *env.out << render::to_yaml(objects);
      }
      return exit_code::kOk;
    }
    auto be = open_backend(env, target);
    if (!local) provide_launcher_image(env, project, how);
    // What the image needs of the nodes' drivers, unless the project or the build says.
    if (!build && !sync && !local) fill_cuda_from_image(env, project, {});
    backend::SubmitOptions opts;
    opts.run_id = run_id;
    opts.dry_run_server = dry_run == "server";
    // A large sweep takes a while: how many objects are in.
    Progress progress(env, "ktrain submit");
    opts.progress = [&progress](std::size_t done, std::size_t total) {
      if (total >= kProgressFrom) progress.count("objects sent", done, total);
    };
    const backend::SubmitResult r = be->submit(project, opts);
    progress.end_live();
    if (output_format == "json" || output_format == "yaml") {
      nlohmann::ordered_json j;
      j["runs"] = r.runs;
      j["objects"] = r.objects;
      print_document(env, j, output_format);
    } else {
      for (const auto& name : r.runs) *env.out << name << "\n";
    }
    env.out->flush();
    const int parallel = project.train ? project.train->sweep_parallel : 0;
    const bool waits =
        parallel > 0 && static_cast<int>(r.runs.size()) > parallel && !opts.dry_run_server;
    const std::string sweep = r.runs.empty() ? "" : sweep_of(r.runs.front());
    if (waits && !env.global.quiet) {
      *env.err << "ktrain: " << r.runs.size() - static_cast<size_t>(parallel) << " runs of "
               << sweep << " wait for a place (train.sweep.parallel: " << parallel
               << "); this command starts them as runs end (interrupted, they go on waiting: "
                  "'ktrain resume --all "
               << sweep << "' starts them all)\n";
    }
    if (!wait && !follow) {
      if (waits) release_sweep(env, *be, sweep, r.runs, parallel, nullptr);
      return exit_code::kOk;
    }
    // train.notify (or --on-finish) when each run ends.
    Notify notify;
    if (project.train) notify = {project.train->notify_command, project.train->notify_url};
    if (!on_finish.empty()) notify.command = on_finish;
    std::function<void(const backend::RunStatus&)> on_end;
    if (!notify.empty()) {
      on_end = [&env, notify](const backend::RunStatus& st) { notify_finish(env, notify, st); };
    }
    if (!waits) return wait_for_runs(env, *be, r.runs, timeout_s, follow, nullptr, on_end);
    // The waiting runs are started while the others are waited for (or followed).
    // If they cannot be started, waiting for them is in vain: the wait ends, and the
    // error is said.
    std::atomic<bool> done{false}, failed{false};
    std::optional<Error> release_error;
    std::thread releaser([&] {
      try {
        release_sweep(env, *be, sweep, r.runs, parallel, [&done] { return done.load(); });
      } catch (const Error& e) {
        release_error = e.wrapped("starting the waiting runs of " + sweep);
        failed = true;
      }
    });
    int status = exit_code::kOk;
    try {
      status = wait_for_runs(
          env, *be, r.runs, timeout_s, follow, [&failed] { return failed.load(); }, on_end);
    } catch (...) {
      done = true;
      releaser.join();
      throw;
    }
    done = true;
    releaser.join();
    if (release_error) throw *release_error;
    return status;
  }

  std::string output_format;
};

}  // namespace

void add_submit_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<SubmitOptions>();
  auto* sub = app.add_subcommand("submit", "Start the project's training job; print the run name");
  opts->project_flags.add_to(*sub);
  opts->target.add_to(*sub);
  sub->add_option("--run-id", opts->run_id, "Use this run id instead of a random one");
  sub->add_flag("--wait", opts->wait,
                "Wait for the job to end; exit 0 when it succeeded, 1 when it failed");
  sub->add_flag("--follow", opts->follow,
                "Print every rank's log until the job ends (implies --wait)");
  sub->add_option("--dry-run", opts->dry_run,
                  "client: print what would be sent; server: have the API server check it")
      ->expected(0, 1)
      ->default_str("client")
      ->type_name("client|server|none");
  sub->add_flag("--build", opts->build,
                "Build and push the image first (as ktrain build), then run it by digest");
  sub->add_flag("--sync", opts->sync,
                "Push what changed in the workspace since the last build here as one thin "
                "layer on it (as ktrain build --sync), then run that by digest: local edits "
                "without a rebuild (train.sync: true does it on every submit)");
  add_push_launcher_flag(*sub, opts->push_launcher);
  sub->add_option("--insecure-registry", opts->insecure_registries,
                  "With --build, --sync or --push-launcher: use plain HTTP for this registry host");
  sub->add_option("--platform", opts->platform,
                  "With --build or --sync: platform of the base image (default linux/amd64)");
  sub->add_option("--timeout", opts->timeout,
                  "With --wait/--follow: give up after this long (exit 124)");
  sub->add_option("--on-finish", opts->on_finish,
                  "With --wait/--follow: run this shell command when each run ends, with "
                  "KTRAIN_RUN, KTRAIN_NAMESPACE, KTRAIN_STATE and KTRAIN_EXIT_CODE set "
                  "(instead of train.notify.command)")
      ->type_name("CMD");
  sub->callback([opts, &env, &result] {
    opts->output_format = env.global.output;
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
