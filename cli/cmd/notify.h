#pragma once
// When a waited-for run ends (submit --wait/--follow, status --watch): a command run
// with the run's name, state and exit code (--on-finish, train.notify.command), and a
// webhook that gets them as JSON (train.notify.url).

#include <string>

#include "base/run_status.h"
#include "cmd/command.h"

namespace ktrain::cmd {

/// What to do when a run ends; both may be empty.
struct Notify {
  std::string command;  ///< run with /bin/sh -c, its output on stderr
  std::string url;      ///< http(s):// URL that gets a JSON POST
  bool empty() const { return command.empty() && url.empty(); }
};

/// The exit code a run's end stands for: 0 when it succeeded; else the exit code of
/// the rank that failed first (a peer-stopped rank's 75 only when no other is known),
/// or 1 when none is known.
int run_exit_code(const RunStatus& st);

/// The webhook's JSON: {"run", "namespace", "state", "exitCode", "text"} ("text" is one
/// line, so that chat webhooks such as Slack's show it).
std::string notify_payload(const RunStatus& st);

/// Runs the command (with KTRAIN_RUN, KTRAIN_NAMESPACE, KTRAIN_STATE and
/// KTRAIN_EXIT_CODE in its environment; at most 5 minutes) and POSTs to the URL
/// (10 seconds), for a run that has ended. A failure of either is a warning: the run's
/// own outcome decides ktrain's exit status.
void notify_finish(Env& env, const Notify& n, const RunStatus& st);

}  // namespace ktrain::cmd
