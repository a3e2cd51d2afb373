#include "cmd/stop.h"

#include <algorithm>
#include <memory>
#include <ostream>

#include "backend/run_id.h"
#include "base/error.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

struct StopOptions {
  TargetFlags target;
  std::vector<std::string> runs;
  bool sweeps = false;  ///< --all: each name is a sweep
  bool resume = false;  ///< resume rather than stop

  const char* verb() const { return resume ? "resume" : "stop"; }

  int run(Env& env) const {
    int status = exit_code::kOk;
    for (const auto& name : runs) {
      if (sweeps) {
        status = std::max(status, change_sweep(env, name));
        continue;
      }
      status = std::max(status, change(env, *open_backend(env, target, name), name));
    }
    return status;
  }

  /// Stops or resumes one run; an error is reported and its exit status returned, so
  /// that the other runs are still changed.
  int change(Env& env, backend::Backend& be, const std::string& name) const {
    try {
      const bool changed = resume ? be.resume(name) : be.stop(name);
      if (!env.global.quiet) {
        if (changed) {
          *env.out << (resume ? "resumed " : "stopped ") << name << "\n";
        } else {
          *env.out << name << (resume ? " is not stopped" : " is stopped already") << "\n";
        }
      }
      return exit_code::kOk;
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      *env.err << "ktrain: error: " << (resume ? "resuming " : "stopping ") << name << ": "
               << e.what() << "\n";
      return e.exit_status();
    }
  }

  /// Every run of `sweep` that has not ended (those that have are left as they are).
  int change_sweep(Env& env, const std::string& sweep) const {
    std::vector<std::string> found;
    size_t ended = 0;
    std::unique_ptr<backend::Backend> be;
    try {
      be = open_backend_for_sweep(env, target, sweep);
      backend::ListFilter filter;
      filter.sweep = sweep;
      for (const auto& s : be->list(filter)) {
        if (s.state == backend::RunState::kSucceeded || s.state == backend::RunState::kFailed) {
          ++ended;
        } else {
          found.push_back(s.name);
        }
      }
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      *env.err << "ktrain: error: " << (resume ? "resuming" : "stopping") << " sweep " << sweep
               << ": " << e.what() << "\n";
      return e.exit_status();
    }
    if (found.empty()) {
      if (ended > 0) {
        if (!env.global.quiet) {
          *env.out << "every run of " << sweep << " has ended (" << ended << "): nothing to "
                   << verb() << "\n";
        }
        return exit_code::kOk;
      }
      *env.err << "ktrain: error: no run of a sweep named \"" << sweep
               << "\" (a sweep's name is its runs' name without the last \"-N\"; see "
                  "'ktrain list')\n";
      return exit_code::kFailed;
    }
    // NAME-2 before NAME-10.
    std::sort(found.begin(), found.end(), backend::before_in_sweep);
    int status = exit_code::kOk;
    for (const auto& name : found) status = std::max(status, change(env, *be, name));
    return status;
  }
};

void add(CLI::App& app, Env& env, CommandResult& result, bool resume) {
  auto opts = std::make_shared<StopOptions>();
  opts->resume = resume;
  auto* sub = resume
                  ? app.add_subcommand("resume", "Start stopped runs again (from 'ktrain stop')")
                  : app.add_subcommand("stop",
                                       "Stop runs and keep them: the pods go; the Job, its status "
                                       "and the logs that remain stay ('ktrain resume' restarts)");
  sub->add_option("RUN", opts->runs, "The runs' names (with --all, the sweeps' names)")->required();
  sub->add_flag("--all", opts->sweeps,
                resume ? "Each name is a sweep: resume every stopped run of it"
                       : "Each name is a sweep: stop every run of it that has not ended");
  opts->target.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace

void add_stop_command(CLI::App& app, Env& env, CommandResult& result) {
  add(app, env, result, false);
}

void add_resume_command(CLI::App& app, Env& env, CommandResult& result) {
  add(app, env, result, true);
}

}  // namespace ktrain::cmd
