#include "cmd/version.h"

#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cmd/run_common.h"
#include "render/kube_version.h"

namespace ktrain::cmd {

namespace {

struct VersionOptions {
  bool server = false;
  TargetFlags target;

  /// --server, or --local (which names what serves the runs).
  bool ask_server() const { return server || target.local; }

  int run(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "json" && o != "yaml" && o != "table") {
      throw UsageError("-o " + o + ": version prints json or yaml");
    }
    nlohmann::ordered_json j;
    j["clientVersion"] = {{"version", KTRAIN_VERSION}};
    if (ask_server()) {
      // What runs the runs: the API server of the context (its /version, as `kubectl
      // version` shows it), or this machine with --local.
      auto be = open_backend(env, target);
      const nlohmann::ordered_json answer = be->server_version();
      for (auto it = answer.begin(); it != answer.end(); ++it) j[it.key()] = it.value();
      if (j.contains("serverVersion")) {
        const auto& sv = j["serverVersion"];
        j["testedVersions"] = {{"oldest", render::kOldestTested.str()},
                               {"newest", render::kNewestTested.str()}};
        if (const auto v = render::kube_version_of(sv)) {
          if (auto w = render::untested_release(*v); !w.empty()) env.warn("the API server is " + w);
        }
      }
    }
    if (o == "json" || o == "yaml") {
      print_document(env, j, o);
      return exit_code::kOk;
    }
    *env.out << "ktrain " << KTRAIN_VERSION << "\n";
    if (j.contains("serverVersion")) {
      const auto& sv = j["serverVersion"];
      std::string version = sv.value("gitVersion", "");
      if (version.empty()) version = sv.value("major", "?") + "." + sv.value("minor", "?");
      *env.out << "server " << version;
      if (sv.contains("platform")) *env.out << " (" << sv.value("platform", "") << ")";
      *env.out << " at " << j.value("server", "") << "\n";
    } else if (j.contains("server")) {
      *env.out << "server " << j.value("server", "") << "\n";
    }
    return exit_code::kOk;
  }
};

}  // namespace

void add_version_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<VersionOptions>();
  auto* sub = app.add_subcommand("version", "Print the client version (and the API server's)");
  sub->add_flag("--server", opts->server,
                "Also ask the API server of the current context for its version");
  opts->target.add_to(*sub);
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
