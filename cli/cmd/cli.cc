#include <memory>
#include <ostream>
#include <vector>

#include "backend/local_run.h"
#include "base/error.h"
#include "cmd/build.h"
#include "cmd/command.h"
#include "cmd/completion.h"
#include "cmd/delete.h"
#include "cmd/init.h"
#include "cmd/list.h"
#include "cmd/logs.h"
#include "cmd/render.h"
#include "cmd/scale.h"
#include "cmd/serve.h"
#include "cmd/status.h"
#include "cmd/submit.h"
#include "cmd/validate.h"
#include "cmd/version.h"

namespace ktrain::cmd {

namespace {

using Adder = void (*)(CLI::App&, Env&, CommandResult&);

/// Every verb, in the order `ktrain --help` lists them.
const std::vector<Adder>& all_commands() {
  static const std::vector<Adder> adders = {
      add_init_command,    add_validate_command, add_render_command, add_build_command,
      add_submit_command,  add_list_command,     add_status_command, add_logs_command,
      add_delete_command,  add_serve_command,    add_scale_command,  add_completion_command,
      add_version_command,
  };
  return adders;
}

void add_global_flags(CLI::App& app, GlobalOptions& g) {
  app.add_option("--kubeconfig", g.kubeconfig, "Path to the kubeconfig file")->group("Global");
  app.add_option("--context", g.context, "The kubeconfig context to use")->group("Global");
  app.add_option("-n,--namespace", g.namespace_, "The namespace to use")->group("Global");
  app.add_option("-o,--output", g.output, "Output format: table|wide|yaml|json|name")
      ->group("Global");
  app.add_flag("-v,--verbose", g.verbose, "Log requests and timings (repeat for more)")
      ->group("Global");
  app.add_flag("--no-color", g.no_color, "No colour (also NO_COLOR)")->group("Global");
  app.add_flag("-q,--quiet", g.quiet, "Print only results and errors")->group("Global");
}

/// `ktrain __keeper DIR`: the hidden keeper of a local run (backend/local_run.h).
void add_keeper_command(CLI::App& app, Env& /*env*/, CommandResult& result) {
  auto dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("__keeper", "");
  sub->group("");
  sub->add_option("DIR", *dir)->required();
  sub->callback([dir, &result] { result.status = backend::run_local_keeper(*dir); });
}

}  // namespace

int run_cli(int argc, const char* const* argv, Env& env) {
  CLI::App app{"ktrain: ML training and inference on Kubernetes, from one short project file",
               "ktrain"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", std::string("ktrain ") + KTRAIN_VERSION);
  add_global_flags(app, env.global);
  CommandResult result;
  for (auto add : all_commands()) add(app, env, result);
  add_keeper_command(app, env, result);
  for (auto* sub : app.get_subcommands({})) sub->fallthrough();

  try {
    app.parse(argc, argv);
    return result.status;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, *env.out, *env.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, *env.out, *env.err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, *env.out, *env.err);
  } catch (const CLI::ParseError& e) {
    *env.err << "ktrain: error: " << e.what() << "\n"
             << "Run 'ktrain --help' (or 'ktrain VERB --help') for usage.\n";
    return exit_code::kUsage;
  } catch (const Error& e) {
    *env.err << "ktrain: error: " << e.what() << "\n";
    return e.exit_status();
  }
}

}  // namespace ktrain::cmd
