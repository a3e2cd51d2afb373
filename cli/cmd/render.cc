#include "cmd/render.h"

#include <memory>
#include <ostream>

#include "base/error.h"
#include "cmd/built_image.h"
#include "render/render.h"
#include "render/targets/targets.h"

namespace ktrain::cmd {

void RenderCommandOptions::complete(const Env& env) {
  output = env.global.output.empty() ? "yaml" : env.global.output;
}

void RenderCommandOptions::validate() const {
  if (!insecure_registries.empty() && !inspect_image) {
    throw UsageError("--insecure-registry is for --inspect-image");
  }
  if (output != "yaml" && output != "json") {
    throw UsageError("-o " + output + ": render prints yaml or json");
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
  render::Rendered r = render::render_project(p, ro);
  for (const auto& w : r.warnings) env.warn(w);
  // The same bytes for the same project and run id, with no secret in them: the
  // rendezvous Secret is made by submit, not printed (a Job's pods do without it).
  note_rendezvous_secret(env, p);
  *env.out << (output == "json" ? render::to_json(r.objects) : render::to_yaml(r.objects));
  env.out->flush();
  return exit_code::kOk;
}

void note_rendezvous_secret(const Env& env, const project::Project& p) {
  if (!p.train || p.train->nodes < 2 || env.global.quiet) return;
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
  sub->add_flag("--inspect-image", opts->inspect_image,
                "Read the CUDA version the image needs from its registry (when the project "
                "uses GPUs and sets no train.cuda / serve.cuda)");
  sub->add_option("--insecure-registry", opts->insecure_registries,
                  "With --inspect-image: reach this registry (HOST[:PORT]) over plain HTTP")
      ->type_name("HOST");
  sub->add_option("--run-id", opts->run_id,
                  "The run id in names (<name>-<id>); default: stable, derived from the project");
  sub->callback([opts, &env, &result] {
    opts->complete(env);
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
