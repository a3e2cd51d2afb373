#include "cmd/project_flags.h"

#include "project/parse.h"

namespace ktrain::cmd {

void ProjectFlags::add_to(CLI::App& app) {
  app.add_option("-f,--file", file, "The project file (default ktrain.yaml; - reads stdin)");
  app.add_option("--set", sets,
                 "Override a value by key path, e.g. --set train.nodes=2 (repeatable)")
      ->allow_extra_args(false);
}

project::Project ProjectFlags::load(Env& env) const {
  return project::load_project(env, file, sets);
}

}  // namespace ktrain::cmd
