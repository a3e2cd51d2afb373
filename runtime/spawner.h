#pragma once
// Starting worker processes, each in its own process group.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace ktrain::launch {

/// What to start.
struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  ///< set on top of the launcher's own
  int stdout_fd = -1;  ///< becomes the child's stdout (-1: inherit)
  int stderr_fd = -1;  ///< becomes the child's stderr (-1: inherit)
};

/// Starts processes; abstract so it can be faked. The real one is ProcessSpawner.
class Spawner {
 public:
  virtual ~Spawner() = default;
  /// Starts the request in a new process group whose id is the returned pid.
  /// Returns -1 with errno set when the process could not be created (a command
  /// that cannot be executed shows up as exit status 127 instead).
  virtual pid_t spawn(const SpawnRequest& request) = 0;
};

/// fork + setpgid + execvp, with default signal dispositions in the child.
class ProcessSpawner : public Spawner {
 public:
  pid_t spawn(const SpawnRequest& request) override;
};

/// Variables never passed on to a child, whatever the launcher's environment
/// holds: the rendezvous secret is the launcher's alone (workers run the user's
/// code, and the GPU helper needs no secret).
inline constexpr const char* kWithheldVariables[] = {"KTRAIN_RDZV_SECRET", "KTRAIN_RDZV_JOB_UID"};

/// Removes kWithheldVariables from this process's environment and wipes their
/// original text, so that /proc/<launcher>/environ, which a worker can read, no
/// longer shows them either. For after the configuration has been read.
void withhold_from_environment();

/// Returns `base` ("NAME=value" strings) with `overrides` replacing or adding
/// entries, and without kWithheldVariables.
std::vector<std::string> merge_environment(
    char** base, const std::vector<std::pair<std::string, std::string>>& overrides);

/// Where execvp finds `name` for a worker with `env` on top of the launcher's
/// environment: on PATH (the worker's, else the launcher's), or `name` itself when it
/// holds a '/'; "" when it is not there or not executable.
std::string find_on_path(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace ktrain::launch
