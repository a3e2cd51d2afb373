#include "cmd/version.h"

#include <ostream>

#include <nlohmann/json.hpp>

namespace ktrain::cmd {

void add_version_command(CLI::App& app, Env& env, CommandResult& result) {
  auto* sub = app.add_subcommand("version", "Print the client version");
  sub->callback([&env, &result] {
    if (env.global.output == "json") {
      nlohmann::ordered_json j;
      j["clientVersion"] = {{"version", KTRAIN_VERSION}};
      *env.out << j.dump(2) << "\n";
    } else {
      *env.out << "ktrain " << KTRAIN_VERSION << "\n";
    }
    result.status = 0;
  });
}

}  // namespace ktrain::cmd
