// ktrain-launch: the entrypoint of every training container. Thin: parses the
// configuration and hands it to run_launcher().
#include <unistd.h>

#include <string>
#include <vector>

#include "runtime/checkpoint.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/install.h"
#include "runtime/launcher.h"
#include "runtime/spawner.h"
#include "runtime/termination_log.h"
#include "runtime/version.h"

int main(int argc, char** argv) {
  using namespace ktrain::launch;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto env = environment_map();
  Config config;
  try {
    config = parse_config(args, env);
  } catch (const LaunchError& e) {
    log_line(std::string("error: ") + e.what());
    auto it = env.find("KTRAIN_TERMINATION_LOG");
    write_termination_log(
        it != env.end() && !it->second.empty() ? it->second : "/dev/termination-log", e.what());
    return e.status();
  }
  // The secret is in `config` now; children never see it (spawner.h).
  withhold_from_environment();
  for (const char* name : kWithheldVariables) env.erase(name);
  if (config.help) {
    std::string text = help_text();
    return ::write(STDOUT_FILENO, text.data(), text.size()) < 0 ? 1 : 0;
  }
  if (config.version) {
    std::string text = std::string("ktrain-launch ") + version() + "\n";
    return ::write(STDOUT_FILENO, text.data(), text.size()) < 0 ? 1 : 0;
  }
  if (config.latest_checkpoint) {
    // Run by `ktrain status` in a live container (pods/exec): it writes no termination
    // message, which would outlast this command and be taken for the container's end.
    auto it = env.find("KTRAIN_CHECKPOINT_DIR");
    if (it == env.end() || it->second.empty()) {
      log_line("error: KTRAIN_CHECKPOINT_DIR is not set: this run has no checkpoint volume");
      return 78;
    }
    std::string text;
    if (auto found = latest_checkpoint(it->second)) {
      text = std::to_string(found->mtime_unix) + " " + found->path + "\n";
    }
    return ::write(STDOUT_FILENO, text.data(), text.size()) < 0 ? 1 : 0;
  }
  if (!config.install_dir.empty()) {
    try {
      log_line(install_launcher(config.install_dir));
      return 0;
    } catch (const LaunchError& e) {
      log_line(std::string("error: ") + e.what());
      write_termination_log("/dev/termination-log", e.what());
      return e.status();
    }
  }
  return run_launcher(config, env);
}
