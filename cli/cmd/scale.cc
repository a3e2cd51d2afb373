#include "cmd/scale.h"

#include <memory>
#include <ostream>

#include "backend/kube_backend.h"
#include "base/error.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

void validate_scale(const ScaleRequest& req) {
  if (req.name.empty()) throw UsageError("scale: NAME is required");
  if (!req.replicas && !req.min && !req.max) {
    throw UsageError("scale " + req.name +
                     ": give --replicas N, or --min/--max for the autoscaler");
  }
  if (req.replicas && *req.replicas < 0) {
    throw UsageError("--replicas " + std::to_string(*req.replicas) + ": must be 0 or more");
  }
  if (req.min && *req.min < 1) {
    throw UsageError("--min " + std::to_string(*req.min) + ": must be 1 or more");
  }
  if (req.max && *req.max < 1) {
    throw UsageError("--max " + std::to_string(*req.max) + ": must be 1 or more");
  }
  if (req.min && req.max && *req.min > *req.max) {
    throw UsageError("--min " + std::to_string(*req.min) + " is more than --max " +
                     std::to_string(*req.max));
  }
}

int run_scale(Env& env, backend::Backend& backend, const ScaleRequest& req) {
  validate_scale(req);
  const auto r = backend.scale(req);
  for (const auto& w : r.warnings) env.warn(w);
  for (const auto& line : r.changed) *env.out << line << "\n";
  return exit_code::kOk;
}

int run_scale(Env& env, kube::Client& client, const ScaleRequest& req) {
  backend::KubeBackend kb(client, env);
  return run_scale(env, kb, req);
}

void add_scale_command(CLI::App& app, Env& env, CommandResult& result) {
  struct Flags {
    TargetFlags target;
    std::string name;
    int replicas = -1, min = -1, max = -1;
  };
  auto f = std::make_shared<Flags>();
  auto* sub =
      app.add_subcommand("scale", "Set a served model's replicas, or its autoscaler's --min/--max");
  sub->add_option("NAME", f->name,
                  "The serve name (its Deployment, InferenceService or LeaderWorkerSet)")
      ->required();
  f->target.add_to(*sub);
  auto* rep = sub->add_option("--replicas", f->replicas, "Replicas, through the scale subresource");
  auto* mn = sub->add_option("--min", f->min, "The autoscaler's minimum replicas");
  auto* mx = sub->add_option("--max", f->max, "The autoscaler's maximum replicas");
  sub->callback([f, rep, mn, mx, &env, &result] {
    ScaleRequest req;
    req.name = f->name;
    if (rep->count()) req.replicas = f->replicas;
    if (mn->count()) req.min = f->min;
    if (mx->count()) req.max = f->max;
    validate_scale(req);
    auto be = open_backend(env, f->target);
    result.status = run_scale(env, *be, req);
  });
}

}  // namespace ktrain::cmd
