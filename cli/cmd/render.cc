#include "cmd/render.h"

#include <memory>
#include <ostream>

#include "base/error.h"
#include "cmd/built_image.h"
#include "cmd/diff.h"
#include "cmd/run_common.h"
#include "kube/connection.h"
#include "render/kube_version.h"
#include "render/render.h"
#include "render/targets/targets.h"

namespace ktrain::cmd {

void RenderCommandOptions::complete(const Env& env) {
  output = env.global.output.empty() ? "yaml" : env.global.output;
  if (!kube_version.empty()) kube_release = render::parse_kube_version(kube_version);
}

void RenderCommandOptions::validate() const {
  if (!insecure_registries.empty() && !inspect_image) {
    throw UsageError("--insecure-registry is for --inspect-image");
  }
  if (output != "yaml" && output != "json") {
    throw UsageError("-o " + output + ": render prints yaml or json");
  }
  if (!dry_run.empty() && dry_run != "server" && dry_run != "none") {
    throw UsageError("--dry-run=" + dry_run +
                     ": render --dry-run takes server (render itself is the client's dry run)");
  }
  if (!kube_version.empty()) {
    if (!kube_release || kube_release->major != 1) {
      throw UsageError("--kube-version " + kube_version + ": expected a Kubernetes release like " +
                       render::kNewestTested.str());
    }
  }
}

int RenderCommandOptions::run(Env& env) const {
  project::Project p = project.load(env);
  use_built_image(env, p, false);  // what ktrain build pushed last, by digest
  if (inspect_image) fill_cuda_from_image(env, p, insecure_registries);
  render::RenderOptions ro;
  ro.run_id = run_id;
  ro.strict = strict;
  ro.templates_dir = templates_dir;
  ro.fs = env.fs;
  if (kube_release) {
    ro.kube_version = *kube_release;
    if (auto w = render::untested_release(ro.kube_version); !w.empty()) {
      env.warn("--kube-version " + kube_version + ": " + w);
    }
  }
  render::Rendered r = render::render_project(p, ro);
  for (const auto& w : r.warnings) env.warn(w);
  if (dry_run == "server") {
    // Each object through the cluster's defaulting and admission (nothing kept); a
    // refusal is exit 2 with the object and the server's words, and nothing printed.
    if (!cluster_configured(env)) {
      throw Error(
          "--dry-run=server checks the objects with a cluster, and none is configured "
          "(no --kubeconfig, $KUBECONFIG or ~/.kube/config)",
          exit_code::kUnreachable);
    }
    kube::Connection connection(env);
    server_dry_run(connection.client(), r.objects);
    if (!env.global.quiet) {
      *env.err << "ktrain: the API server accepts all " << r.objects.size()
               << " objects (server-side dry run: nothing was kept)\n";
    }
  }
  // The same bytes for the same project and run id, with no secret in them: the
  // rendezvous Secret is made by submit, not printed (a Job's pods do without it).
  note_rendezvous_secret(env, p);
  // Which release the objects are for: a comment in YAML, a note on stderr with JSON.
  const std::string assumed =
      "rendered for Kubernetes " + ro.kube_version.str() +
      (kube_version.empty()
           ? ", the newest release ktrain is tested against (--kube-version sets another)"
           : " (--kube-version)");
  if (output == "json") {
    if (!env.global.quiet) *env.err << "ktrain: " << assumed << "\n";
    *env.out << render::to_json(r.objects);
  } else {
    *env.out << "# " << assumed << "\n" << render::to_yaml(r.objects);
  }
  env.out->flush();
  return exit_code::kOk;
}

void note_rendezvous_secret(const Env& env, const project::Project& p) {
  // Elastic nodes meet at torchrun's c10d store: their pods need no Secret.
  if (!p.train || p.train->nodes < 2 || p.train->min_nodes > 0 || env.global.quiet) return;
  const auto& target = render::targets::train_target(p.train->target);
  if (!target.rendezvous || std::string(target.name) == "job") return;
  *env.err << "ktrain: note: the pods of train.target " << target.name
           << " wait for the rendezvous Secret <run>-rdzv, which 'ktrain submit' creates and "
              "these manifests leave out; before 'kubectl apply', create it once a run: "
              "kubectl create secret generic <run>-rdzv --from-literal=token=\"$(openssl rand "
              "-hex 32)\"\n";
}

void add_render_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<RenderCommandOptions>();
  auto* sub = app.add_subcommand(
      "render", "Print the Kubernetes objects of the project (-o yaml, the default, or -o json)");
  opts->project.add_to(*sub);
  sub->add_flag("--strict", opts->strict,
                "Treat warnings (an image without a pinned tag, ...) as errors");
  sub->add_option("--templates", opts->templates_dir,
                  "Use the skeletons in DIR (same file names as templates/) instead of the "
                  "built-in ones");
  sub->add_option("--dry-run", opts->dry_run,
                  "server: have the cluster's API server check every object (defaulting and "
                  "admission, nothing kept) before printing them")
      ->type_name("server");
  sub->add_flag("--inspect-image", opts->inspect_image,
                "Read the CUDA version the image needs from its registry (when the project "
                "uses GPUs and sets no train.cuda / serve.cuda)");
  sub->add_option("--insecure-registry", opts->insecure_registries,
                  "With --inspect-image: reach this registry (HOST[:PORT]) over plain HTTP")
      ->type_name("HOST");
  sub->add_option("--run-id", opts->run_id,
                  "The run id in names (<name>-<id>); default: stable, derived from the project");
  sub->add_option("--kube-version", opts->kube_version,
                  "Render for this Kubernetes release (1.N): fields it does not serve are left "
                  "out. Default: the newest release ktrain is tested against (" +
                      render::kNewestTested.str() + "); submit renders for the API server's")
      ->type_name("1.N");
  sub->callback([opts, &env, &result] {
    opts->complete(env);
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
