#include "cmd/version.h"

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cmd/run_common.h"

namespace ktrain::cmd {

namespace {

/// The Kubernetes releases the test suite runs against (tests/fixtures/k8s): the oldest
/// the project supports and the newest it has tried.
constexpr int kOldestTestedMinor = 32;
constexpr int kNewestTestedMinor = 36;

/// The minor version of a /version answer ("36", or "36+" as some distributions say).
std::optional<int> minor_of(const nlohmann::ordered_json& sv) {
  if (sv.value("major", "") != "1") return std::nullopt;
  const std::string m = sv.value("minor", "");
  int n = 0;
  size_t i = 0;
  for (; i < m.size() && i < 4 && m[i] >= '0' && m[i] <= '9'; ++i) n = n * 10 + (m[i] - '0');
  if (i == 0) return std::nullopt;
  return n;
}

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
        j["testedVersions"] = {{"oldest", "1." + std::to_string(kOldestTestedMinor)},
                               {"newest", "1." + std::to_string(kNewestTestedMinor)}};
        const auto minor = minor_of(sv);
        if (minor && (*minor < kOldestTestedMinor || *minor > kNewestTestedMinor)) {
          env.warn("the API server is Kubernetes 1." + std::to_string(*minor) +
                   (*minor < kOldestTestedMinor
                        ? ", older than 1." + std::to_string(kOldestTestedMinor) +
                              ", the oldest ktrain is tested against: some of what it renders "
                              "may be refused or ignored there"
                        : ", newer than 1." + std::to_string(kNewestTestedMinor) +
                              ", the newest ktrain is tested against"));
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
