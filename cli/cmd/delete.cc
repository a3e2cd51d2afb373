#include "cmd/delete.h"

#include <algorithm>
#include <memory>
#include <ostream>

#include "backend/run_id.h"
#include "base/error.h"
#include "base/progress.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct DeleteOptions {
  TargetFlags target;
  std::vector<std::string> runs;
  bool sweeps = false;  ///< --all: each name is a sweep

  int run(Env& env) const {
    int status = exit_code::kOk;
    for (const auto& name : runs) {
      if (sweeps) {
        status = std::max(status, remove_sweep(env, name));
        continue;
      }
      status = std::max(status, remove(env, *open_backend(env, target, name), name));
    }
    return status;
  }

  /// Deletes one run; an error is reported and its exit status returned, so that the
  /// other runs are still deleted.
  static int remove(Env& env, backend::Backend& be, const std::string& name) {
    try {
      be.remove(name);
      if (!env.global.quiet) *env.out << "deleted " << name << "\n";
      return exit_code::kOk;
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      *env.err << "ktrain: error: deleting " << name << ": " << e.what() << "\n";
      return e.exit_status();
    }
  }

  /// Deletes every run of `sweep` (the runs that `ktrain submit` made of one sweep).
  int remove_sweep(Env& env, const std::string& sweep) const {
    std::vector<std::string> found;
    std::unique_ptr<backend::Backend> be;
    try {
      be = open_backend_for_sweep(env, target, sweep);
      for (const auto& s : be->list({})) {
        if (s.sweep == sweep) found.push_back(s.name);
      }
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      *env.err << "ktrain: error: deleting sweep " << sweep << ": " << e.what() << "\n";
      return e.exit_status();
    }
    if (found.empty()) {
      *env.err << "ktrain: error: no run of a sweep named \"" << sweep
               << "\" (a sweep's name is its runs' name without the last \"-N\"; see "
                  "'ktrain list')\n";
      return exit_code::kFailed;
    }
    // NAME-2 before NAME-10.
    std::sort(found.begin(), found.end(), backend::before_in_sweep);
    int status = exit_code::kOk;
    // The "deleted" lines show how far it is; when they go to a file or a pipe and
    // stderr is a terminal, a live count there too.
    Progress progress(env, "ktrain delete");
    const bool live = env.err_is_terminal && !env.out_is_terminal && found.size() >= 20;
    for (size_t i = 0; i < found.size(); ++i) {
      status = std::max(status, remove(env, *be, found[i]));
      if (live) progress.count("runs of " + sweep + " deleted", i + 1, found.size());
    }
    return status;
  }
};

}  // namespace

void add_delete_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<DeleteOptions>();
  auto* sub = app.add_subcommand("delete", "Stop runs and delete everything they created");
  sub->add_option("RUN", opts->runs, "The runs' names (with --all, the sweeps' names)")->required();
  sub->add_flag("--all", opts->sweeps,
                "Each name is a sweep: delete every run of it (the runs NAME-0, NAME-1, ... "
                "that one 'ktrain submit' of a sweep made)");
  opts->target.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
