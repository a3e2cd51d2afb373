#include "cmd/init.h"

#include <filesystem>
#include <memory>
#include <ostream>

#include "base/error.h"
#include "base/image_ref.h"
#include "base/names.h"
#include "project/json_schema.h"
#include "project/parse.h"

namespace ktrain::cmd {

namespace {

const char* default_image(const std::string& framework) {
  if (framework == "pytorch") return "nvcr.io/nvidia/pytorch:24.08-py3";
  if (framework == "tensorflow") return "nvcr.io/nvidia/tensorflow:24.08-tf2-py3";
  if (framework == "jax") return "nvcr.io/nvidia/jax:24.04-py3";
  if (framework == "paddle") return "paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6";
  return "python:3.12-slim";
}

/// A YAML scalar for `s`: quoted when plain style would change its meaning.
std::string yaml_scalar(const std::string& s) {
  bool plain = !s.empty() && s.find_first_of(":#{}[],&*!|>'\"%@`") == std::string::npos &&
               s.front() != '-' && s.front() != ' ' && s.back() != ' ';
  return plain ? s : "\"" + s + "\"";
}

}  // namespace

void InitOptions::complete() {
  if (name.empty()) {
    std::filesystem::path dir =
        file == "-" ? std::filesystem::current_path()
                    : std::filesystem::absolute(file).lexically_normal().parent_path();
    name = to_dns1123_label(dir.filename().string(), 40);
    if (name.empty() || !is_dns1123_label(name)) name = "my-training";
  }
  if (image.empty()) image = default_image(framework);
}

void InitOptions::validate() const {
  if (framework != "pytorch" && framework != "paddle" && framework != "tensorflow" &&
      framework != "jax" && framework != "none") {
    throw UsageError(
        "--framework: expected one of pytorch | paddle | tensorflow | jax | none, found \"" +
        framework + "\"");
  }
  if (name.size() > 40 || !is_dns1123_label(name)) {
    throw UsageError(
        "--name: expected a DNS-1123 label (lowercase letters, digits and '-', starting and "
        "ending with a letter or digit, at most 40 characters) like resnet50, found \"" +
        name + "\"");
  }
  if (std::string problem = image_ref_problem(image); !problem.empty())
    throw UsageError("--image: " + problem);
  if (gpus < 0)
    throw UsageError("--gpus: expected a whole number >= 0, found " + std::to_string(gpus));
  if (nodes < 1)
    throw UsageError("--nodes: expected a whole number >= 1, found " + std::to_string(nodes));
}

std::string init_project_text(const InitOptions& o) {
  std::string s;
  // For editors (yaml-language-server); 'ktrain schema' prints the schema it names.
  s += "# yaml-language-server: $schema=" + project::project_schema_id() + "\n";
  s += "# ktrain project file: see 'man ktrain.yaml' for every field.\n";
  s += "# Check it with 'ktrain validate'; see the Kubernetes objects with 'ktrain render'.\n";
  s += "# The first line names its JSON Schema for editors; see 'ktrain schema --help'.\n\n";
  s += "name: " + o.name +
       "                # DNS-1123 label, at most 40 characters; runs are <name>-<id>\n";
  s += "# namespace: ml-team-a        # default: the kubeconfig context's namespace\n";
  s += "# labels: {team: vision}      # added to every rendered object\n\n";
  s += "image: " + yaml_scalar(o.image) + "   # the image to run (pin a tag or digest)\n";
  s += "# Or let 'ktrain build' make it:\n";
  s += "# image:\n";
  s += "#   build:\n";
  s += "#     base: " + o.image + "\n";
  s += "#     repository: registry.example.com/team/" + o.name + "\n\n";
  s += "train:\n";
  s += "  command: [python, train.py]   # run once per worker by ktrain-launch\n";
  s += "  framework: " + o.framework + "            # pytorch | paddle | tensorflow | jax | none\n";
  s += "  nodes: " + std::to_string(o.nodes) +
       "                      # pods; one ktrain-launch per pod\n";
  s += "  gpus: " + std::to_string(o.gpus) +
       "                       # per node; one worker per GPU\n";
  s += "  # cuda: \"12.1\"                # the image's CUDA: pods only where the driver runs "
       "it\n";
  s += "  # cpu: \"8\"                   # Kubernetes quantities: 500m, 2, 16Gi\n";
  s += "  # memory: 64Gi\n";
  s += "  # shm: 16Gi                   # /dev/shm size (data loader workers need it)\n";
  s += "  # env: {NCCL_DEBUG: WARN}\n";
  s += "  # envFrom: [secret/wandb]     # secret/NAME or configMap/NAME\n";
  s += "  # volumes:\n";
  s += "  #   - {claim: datasets, mount: /data, readOnly: true}\n";
  s += "  restarts: 0                   # whole-job retries (backoffLimit)\n";
  s += "  # deadline: 24h               # give up after this long; units s m h d\n";
  s += "  ttl: 7d                       # delete finished jobs after this long\n";
  s +=
      "  preflight: quick              # off | quick | full: GPU and NCCL checks before training\n";
  s += "  # sweep:                      # one run per combination; {lr} in command is replaced\n";
  s += "  #   lr: [\"0.1\", \"0.01\"]\n\n";
  s += "# scheduling:\n";
  s += "#   queue: team-a               # Kueue LocalQueue\n";
  s += "#   gang: none                  # none | kueue | volcano\n";
  s += "#   priority: high              # priorityClassName\n";
  s += "#   nodeSelector: {topology.kubernetes.io/zone: us-east-1a}\n";
  s += "#   tolerations: [\"dedicated=ml:NoSchedule\"]\n\n";
  s += "# security:\n";
  s += "#   runAsUser: 1000\n";
  s += "#   runAsNonRoot: true          # the default\n\n";
  s += "# launcher:                     # how the training container gets ktrain-launch\n";
  s += "#   inject: auto                # auto: from an init container unless image.build made "
       "the image | always | never\n";
  s += "#   image: registry.example.com/ktrain/ktrain-launch:" KTRAIN_VERSION
       "   # default: $KTRAIN_LAUNCHER_IMAGE, else ktrain's\n";
  return s;
}

int InitOptions::run(Env& env) const {
  const std::string text = init_project_text(*this);
  // The file we write must be one that ktrain reads back.
  try {
    project::parse_project(text, file, ".");
  } catch (const project::ProjectError& e) {
    throw Error(std::string("internal error: the generated project file is invalid: ") + e.what());
  }
  if (file == "-") {
    *env.out << text;
    return exit_code::kOk;
  }
  if (env.fs->is_directory(file)) {
    throw UsageError(file + ": is a directory; give a file path, like -f " +
                     (std::filesystem::path(file) / "ktrain.yaml").string());
  }
  if (env.fs->exists(file) && !force) {
    throw UsageError(file + ": already exists; use --force to overwrite it");
  }
  env.fs->write_file(file, text);
  if (!env.global.quiet) *env.out << "wrote " << file << " (check it with 'ktrain validate')\n";
  return exit_code::kOk;
}

void add_init_command(CLI::App& app, Env& env, CommandResult& result) {
  auto o = std::make_shared<InitOptions>();
  auto* sub = app.add_subcommand("init", "Write a commented ktrain.yaml");
  sub->add_option("-f,--file", o->file, "Where to write (default ktrain.yaml; - for stdout)");
  sub->add_option("--name", o->name, "Project name (default: from the folder name)");
  sub->add_option("--image", o->image, "Image to run (default: a stock image for the framework)");
  sub->add_option("--framework", o->framework,
                  "The framework whose environment the workers get (default pytorch)")
      ->type_name("pytorch|paddle|tensorflow|jax|none");
  sub->add_option("--gpus", o->gpus, "GPUs per node (default 1)");
  sub->add_option("--nodes", o->nodes, "Nodes (default 1)");
  sub->add_flag("--force", o->force, "Overwrite an existing file");
  sub->callback([o, &env, &result] {
    InitOptions opts = *o;
    opts.complete();
    opts.validate();
    result.status = opts.run(env);
  });
}

}  // namespace ktrain::cmd
