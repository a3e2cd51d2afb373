#include "cmd/delete.h"

#include <memory>
#include <ostream>

#include "base/error.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct DeleteOptions {
  TargetFlags target;
  std::vector<std::string> runs;

  int run(Env& env) const {
    int status = exit_code::kOk;
    for (const auto& name : runs) {
      try {
        auto be = open_backend(env, target, name);
        be->remove(name);
        if (!env.global.quiet) *env.out << "deleted " << name << "\n";
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {
        // Go on with the other runs; report each failure.
        *env.err << "ktrain: error: deleting " << name << ": " << e.what() << "\n";
        status = std::max(status, e.exit_status());
      }
    }
    return status;
  }
};

}  // namespace

void add_delete_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<DeleteOptions>();
  auto* sub = app.add_subcommand("delete", "Stop runs and delete everything they created");
  sub->add_option("RUN", opts->runs, "The runs' names")->required();
  opts->target.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
