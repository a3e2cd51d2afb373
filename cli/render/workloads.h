#pragma once
// The parts of a render, one function per object kind. Internal to render/: the
// public entry point is render_project (render.h).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/project.h"
#include "project/sweep.h"
#include "render/render.h"

namespace ktrain::render::detail {

/// Returns a fresh copy of a template's skeleton (parsed from YAML) by file name.
using TemplateLoader = std::function<nlohmann::ordered_json(const std::string& file)>;

/// What one render works with.
struct RenderContext {
  const project::Project& project;
  TemplateLoader load;
  std::string image;                               ///< the image every container runs
  std::vector<std::string>* warnings;              ///< where problems that are not fatal go
  LauncherPlan launcher;                           ///< how training pods get ktrain-launch
  const std::set<std::string>* started = nullptr;  ///< RenderOptions::started
};

/// The labels of every object (and pod) of run `run`: ktrain's, then the project's.
/// `sweep` is the sweep label's value, "" when not a sweep.
nlohmann::ordered_json common_labels(const project::Project& project, const std::string& run,
                                     const std::string& sweep);

/// Sets metadata.name, metadata.namespace (when the project gives one) and adds `labels`.
void set_metadata(nlohmann::ordered_json& object, const project::Project& project,
                  const std::string& name, const nlohmann::ordered_json& labels);

/// The objects of one training run (sweep point `point`; index -1 when not a sweep):
/// [PodGroup], headless Service, Job.
std::vector<nlohmann::ordered_json> render_train_run(const RenderContext& ctx,
                                                     const std::string& run,
                                                     const std::string& sweep,
                                                     const project::SweepPoint& point);

/// The objects of `serve`: Deployment, Service, [HorizontalPodAutoscaler].
std::vector<nlohmann::ordered_json> render_serve(const RenderContext& ctx);

/// Removes every key whose value is null, at any depth (unset placeholders of the skeletons).
void prune_nulls(nlohmann::ordered_json& value);

}  // namespace ktrain::render::detail
