#include <memory>
#include <ostream>
#include <vector>

#include "backend/local_run.h"
#include "base/error.h"
#include "base/suggest.h"
#include "cmd/build.h"
#include "cmd/command.h"
#include "cmd/completion.h"
#include "cmd/delete.h"
#include "cmd/dev.h"
#include "cmd/diff.h"
#include "cmd/events.h"
#include "cmd/exec.h"
#include "cmd/init.h"
#include "cmd/list.h"
#include "cmd/logs.h"
#include "cmd/port_forward.h"
#include "cmd/render.h"
#include "cmd/scale.h"
#include "cmd/schema.h"
#include "cmd/serve.h"
#include "cmd/setup.h"
#include "cmd/status.h"
#include "cmd/stop.h"
#include "cmd/submit.h"
#include "cmd/top.h"
#include "cmd/validate.h"
#include "cmd/version.h"

namespace ktrain::cmd {

namespace {

using Adder = void (*)(CLI::App&, Env&, CommandResult&);

/// Every verb, in the order `ktrain --help` lists them.
const std::vector<Adder>& all_commands() {
  static const std::vector<Adder> adders = {
      add_init_command,         add_validate_command, add_render_command,  add_diff_command,
      add_build_command,        add_submit_command,   add_list_command,    add_status_command,
      add_top_command,          add_events_command,   add_logs_command,    add_exec_command,
      add_port_forward_command, add_dev_command,      add_delete_command,  add_stop_command,
      add_resume_command,       add_serve_command,    add_scale_command,   add_setup_command,
      add_completion_command,   add_schema_command,   add_version_command,
  };
  return adders;
}

void add_global_flags(CLI::App& app, GlobalOptions& g) {
  app.add_option("--kubeconfig", g.kubeconfig, "Path to the kubeconfig file")->group("Global");
  app.add_option("--context", g.context, "The kubeconfig context to use")->group("Global");
  app.add_option("-n,--namespace", g.namespace_, "The namespace to use")->group("Global");
  app.add_option("-o,--output", g.output, "Output format")
      ->type_name("table|wide|yaml|json|name")
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

/// "Global flags" and a line for each, as in the verbs' own option lists.
std::string global_flags_help(const CLI::App& app) {
  std::string out = "Global flags (before or after the verb):\n";
  for (const auto* o : app.get_options()) {
    if (o->get_group() != "Global") continue;
    std::string name = o->get_name(false, true);
    if (o->get_items_expected_min() > 0) name += " " + o->get_type_name();
    out += "  " + name;
    out += std::string(name.size() < 28 ? 28 - name.size() : 1, ' ') + o->get_description() + "\n";
  }
  return out;
}

/// The option `name` ("--follow", "-n") of `sub` or of the global flags, or nullptr.
const CLI::Option* find_option(const CLI::App& app, const CLI::App* sub, const std::string& name) {
  if (sub) {
    if (const auto* o = sub->get_option_no_throw(name)) return o;
  }
  return app.get_option_no_throw(name);
}

/// Every flag name of `sub` and of the global flags, with its dashes.
std::vector<std::string> flag_names(const CLI::App& app, const CLI::App* sub) {
  std::vector<std::string> out;
  for (const CLI::App* a : {sub, &app}) {
    if (!a) continue;
    for (const auto* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) out.push_back("--" + l);
      for (const auto& s : o->get_snames()) out.push_back("-" + s);
    }
  }
  return out;
}

/// The "Usage: ..." line of `sub`'s help.
std::string usage_line(const CLI::App& sub) {
  const std::string help = sub.help("ktrain");
  for (std::size_t start = 0; start < help.size();) {
    std::size_t end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    const std::string line = help.substr(start, end - start);
    if (line.rfind("Usage:", 0) == 0) return line;
    start = end + 1;
  }
  return "";
}

/// After a parse error: an unknown verb or flag among `argv`, said in words with the
/// closest known one and the verb's usage; "" when neither is the problem.
std::string diagnose(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> verbs;
  for (const auto* s : app.get_subcommands([](CLI::App* a) { return !a->get_group().empty(); })) {
    verbs.push_back(s->get_name());
  }
  CLI::App* sub = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      // -vv and the like: CLI11 reads short flags stacked; only one-letter names here.
      if (name.size() > 2 && name[1] != '-') continue;
      const CLI::Option* opt = find_option(app, sub, name);
      if (!opt) {
        const std::string where = sub ? "ktrain " + sub->get_name() : std::string("ktrain");
        std::string msg = where + ": unknown flag '" + name + "'";
        if (auto m = closest_match(name, flag_names(app, sub)); !m.empty()) {
          msg += "; did you mean '" + m + "'?";
        }
        if (sub) msg += "\n" + usage_line(*sub);
        return msg;
      }
      if (opt->get_items_expected_min() > 0 && name.size() == arg.size()) ++i;  // its value
      continue;
    }
    if (!sub) {
      CLI::App* found = nullptr;
      try {
        found = app.get_subcommand(arg);
      } catch (const CLI::OptionNotFound&) {
      }
      if (!found) {
        std::string msg = "unknown verb '" + arg + "'";
        if (auto m = closest_match(arg, verbs); !m.empty()) {
          msg += "; did you mean '" + m + "'?\n" + usage_line(*app.get_subcommand(m));
        } else {
          std::string list;
          for (const auto& v : verbs) list += (list.empty() ? "" : ", ") + v;
          msg += "; the verbs are " + list;
        }
        return msg;
      }
      sub = found;
      continue;
    }
    // A nested verb (completion bash) or a positional: go on with its flags.
    try {
      if (CLI::App* nested = sub->get_subcommand(arg)) sub = nested;
    } catch (const CLI::OptionNotFound&) {
    }
  }
  return "";
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
  // Every verb's --help ends with the global flags, which go before or after the verb
  // (after the verb's own footer, if it has one).
  const std::string global = global_flags_help(app);
  for (auto* sub : app.get_subcommands({})) {
    const std::string own = sub->get_footer();
    sub->footer(own.empty() ? global : own + "\n\n" + global);
  }

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
    const std::string why = diagnose(app, argc, argv);
    *env.err << "ktrain: error: " << (why.empty() ? std::string(e.what()) : why) << "\n"
             << "Run 'ktrain --help' (or 'ktrain VERB --help') for usage.\n";
    return exit_code::kUsage;
  } catch (const Error& e) {
    *env.err << "ktrain: error: " << e.what() << "\n";
    return e.exit_status();
  }
}

}  // namespace ktrain::cmd
