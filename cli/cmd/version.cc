#include "cmd/version.h"

#include <memory>
#include <ostream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cmd/run_common.h"
#include "kube/connection.h"

namespace ktrain::cmd {

namespace {

struct VersionOptions {
  bool server = false;

  int run(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "json" && o != "yaml" && o != "table") {
      throw UsageError("-o " + o + ": version prints json or yaml");
    }
    nlohmann::ordered_json j;
    j["clientVersion"] = {{"version", KTRAIN_VERSION}};
    if (server) {
      // The API server's /version, as `kubectl version` shows it.
      kube::Connection connection(env);
      auto& client = connection.client();
      const nlohmann::json v = with_context("asking the API server for its version",
                                            [&] { return client.get("/version"); });
      j["serverVersion"] = nlohmann::ordered_json::parse(v.dump());
      j["server"] = net::redact_url(client.config().cluster.server);
    }
    if (o == "json" || o == "yaml") {
      print_document(env, j, o);
      return exit_code::kOk;
    }
    *env.out << "ktrain " << KTRAIN_VERSION << "\n";
    if (server) {
      const auto& sv = j["serverVersion"];
      std::string version = sv.value("gitVersion", "");
      if (version.empty()) version = sv.value("major", "?") + "." + sv.value("minor", "?");
      *env.out << "server " << version;
      if (sv.contains("platform")) *env.out << " (" << sv.value("platform", "") << ")";
      *env.out << " at " << j.value("server", "") << "\n";
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
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
