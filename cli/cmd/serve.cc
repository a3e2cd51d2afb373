#include "cmd/serve.h"

#include <memory>
#include <ostream>

#include "backend/kube_backend.h"
#include "base/duration.h"
#include "base/error.h"
#include "cmd/built_image.h"
#include "cmd/project_flags.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

int run_serve(Env& env, backend::Backend& backend, const project::Project& project,
              const ServeRun& opts) {
  if (!project.serve) {
    throw UsageError(project.file +
                     ": there is no serve section (use 'ktrain submit' for "
                     "training)");
  }
  backend::ServeOptions so;
  so.wait = opts.wait;
  so.timeout = opts.timeout;
  so.dry_run_server = opts.dry_run_server;
  so.progress = [&env](const std::string& waiting) {
    if (!env.global.quiet) *env.err << waiting << "\n";
  };
  const auto r = backend.serve(project, so);
  if (env.global.output == "name") {
    for (const auto& o : r.objects) *env.out << o << "\n";
  }
  if (!r.waited) {
    if (env.global.output != "name") *env.out << project.name << "\n";
    return exit_code::kOk;
  }
  if (!r.ready) {
    *env.err << "ktrain: error: serving " << project.name << ": timed out after "
             << format_duration(opts.timeout.count()) << " waiting for the rollout (" << r.message
             << ")\n";
    return exit_code::kTimeout;
  }
  if (env.global.output != "name") *env.out << project.name << ": " << r.message << "\n";
  return exit_code::kOk;
}

int run_serve(Env& env, kube::Client& client, const project::Project& project,
              const ServeRun& opts) {
  backend::KubeBackend kb(client, env);
  return run_serve(env, kb, project, opts);
}

namespace {

struct ServeOptions {
  ProjectFlags project;
  TargetFlags target;
  std::string timeout = "10m";
  bool no_wait = false;
  std::string dry_run;

  ServeRun validate() const {
    ServeRun r;
    r.wait = !no_wait;
    auto secs = parse_duration_seconds(timeout);
    if (!secs || *secs <= 0) {
      throw UsageError("--timeout " + timeout + ": expected a duration such as 90s, 10m or 1h");
    }
    r.timeout = std::chrono::seconds(*secs);
    if (!dry_run.empty() && dry_run != "server" && dry_run != "none") {
      throw UsageError("--dry-run " + dry_run +
                       ": serve supports --dry-run=server (use "
                       "'ktrain render' to see the objects)");
    }
    r.dry_run_server = dry_run == "server";
    const auto& o = output_format;
    if (!o.empty() && o != "name") throw UsageError("-o " + o + ": serve prints name");
    return r;
  }
  std::string output_format;
};

}  // namespace

void add_serve_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ServeOptions>();
  auto* sub = app.add_subcommand(
      "serve",
      "Apply the project's serve section (Deployment, Service, HPA; or serve.target's "
      "InferenceService or LeaderWorkerSet) and wait until it is ready");
  opts->project.add_to(*sub);
  opts->target.add_to(*sub);
  sub->add_option("--timeout", opts->timeout,
                  "Give up waiting for the rollout after this long (exit 124)")
      ->capture_default_str();
  sub->add_flag("--no-wait", opts->no_wait, "Apply and return without waiting for the rollout");
  sub->add_option("--dry-run", opts->dry_run, "server: validate on the server, change nothing")
      ->type_name("server|none");
  sub->callback([opts, &env, &result] {
    opts->output_format = env.global.output;
    const ServeRun r = opts->validate();
    if (r.dry_run_server && opts->target.local) {
      throw UsageError("--dry-run=server asks a cluster; it cannot be combined with --local");
    }
    project::Project project = opts->project.load(env);
    auto be = open_backend(env, opts->target);
    // A cluster's pods run what build pushed (refused when nothing was, before anything is
    // sent); a local service (--local, KTRAIN_LOCAL=1, a local one of that name) uses no image.
    if (!opts->target.local && dynamic_cast<backend::KubeBackend*>(be.get())) {
      use_built_image(env, project, true);
      fill_cuda_from_image(env, project, {});
    }
    result.status = run_serve(env, *be, project, r);
  });
}

}  // namespace ktrain::cmd
