#include "cmd/validate.h"

#include <memory>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cmd/built_image.h"
#include "project/parse.h"
#include "render/render.h"

namespace ktrain::cmd {

namespace {

nlohmann::ordered_json problem_json(const project::Problem& p) {
  nlohmann::ordered_json j;
  j["file"] = p.file;
  j["line"] = p.line;
  j["column"] = p.column;
  j["path"] = p.path;
  j["message"] = p.message;
  j["text"] = p.format();
  return j;
}

std::string plural(long n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

std::string project_summary(const project::Project& p) {
  std::string out;
  if (p.train) {
    const auto& t = *p.train;
    out += "train: " + plural(t.nodes, "node") + " x " + plural(t.gpus, "GPU");
    if (!t.mig.empty()) out += " (MIG " + t.mig + ")";
    if (!t.cuda.empty()) out += ", CUDA " + t.cuda;
    out += ", " + t.framework;
    if (!t.sweep.empty()) {
      long runs = 1;
      for (const auto& s : t.sweep) runs *= static_cast<long>(s.values.size());
      out += ", sweep of " + plural(runs, "run");
    }
    out += "; launcher " + render::launcher_plan(p, render::image_to_run(p, {})).reason;
  }
  if (auto u = p.security.user()) {
    if (!out.empty()) out += "; ";
    out += *u == 0 ? "runs as root (security.runAsUser: 0)"
                   : "runs as user " + std::to_string(*u) +
                         (p.security.group() ? ":" + std::to_string(*p.security.group()) : "");
  } else {
    if (!out.empty()) out += "; ";
    out += "runs as the image's user, root included (security.runAsNonRoot: false)";
  }
  if (p.serve) {
    if (!out.empty()) out += "; ";
    out += "serve: port " + std::to_string(p.serve->port);
    if (p.serve->autoscale)
      out += ", " + std::to_string(p.serve->autoscale->min) + ".." +
             std::to_string(p.serve->autoscale->max) + " replicas";
    else if (p.serve->replicas)
      out += ", " + plural(*p.serve->replicas, "replica");
  }
  return out;
}

int ValidateOptions::run(Env& env) const {
  const bool json = env.global.output == "json";
  if (!env.global.output.empty() && !json) {
    throw UsageError("validate: unsupported output format '" + env.global.output +
                     "'; use -o json, or no -o for text");
  }
  try {
    project::Project p = project.load(env);
    // Which image the pods run: with image.build, what ktrain build pushed last.
    const std::optional<ImageChoice> image = use_built_image(env, p, false);
    // What the file renders to must hold too (patches can break it): a probe render.
    try {
      render::RenderOptions ro;
      ro.run_id = render::default_run_id(p);
      render::render_project(p, ro);
    } catch (const UsageError& e) {
      if (json) {
        nlohmann::ordered_json j;
        j["valid"] = false;
        j["file"] = project.file;
        j["problems"] =
            nlohmann::ordered_json::array({{{"message", e.what()}, {"text", e.what()}}});
        *env.out << j.dump(2) << "\n";
      }
      *env.err << e.what() << "\n";
      return exit_code::kUsage;
    }
    if (json) {
      nlohmann::ordered_json j;
      j["valid"] = true;
      j["file"] = project.file;
      j["summary"] = project_summary(p);
      j["image"] = {{"ref", image ? image->image : p.image.ref}};
      if (image) j["image"]["source"] = image->why;
      if (image && !image->problem.empty()) j["image"]["problem"] = image->problem;
      if (p.train) {
        const auto plan = render::launcher_plan(p, render::image_to_run(p, {}));
        j["launcher"] = {{"inject", plan.inject}, {"reason", plan.reason}};
        if (plan.inject) j["launcher"]["image"] = plan.image;
      }
      j["problems"] = nlohmann::ordered_json::array();
      *env.out << j.dump(2) << "\n";
    } else if (!env.global.quiet) {
      *env.out << (project.file == "-" ? "<stdin>" : project.file) << ": valid ("
               << project_summary(p) << ")\n";
      if (image) *env.out << "  image: " << image->why << "\n";
    }
    return exit_code::kOk;
  } catch (const project::ProjectError& e) {
    if (json) {
      nlohmann::ordered_json j;
      j["valid"] = false;
      j["file"] = project.file;
      j["problems"] = nlohmann::ordered_json::array();
      for (const auto& pr : e.problems()) j["problems"].push_back(problem_json(pr));
      *env.out << j.dump(2) << "\n";
    }
    for (const auto& pr : e.problems()) *env.err << pr.format() << "\n";
    return exit_code::kUsage;
  }
}

void add_validate_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand("validate", "Check the project file; report every problem");
  opts->project.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
