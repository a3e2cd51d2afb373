#pragma once
// The one-line cause of the container's end, where Kubernetes shows it
// (terminationMessagePath, /dev/termination-log) and `ktrain status` reads it.

#include <string>

namespace ktrain::launch {

/// Writes `cause` (through printable(): it may quote a peer) and a newline to
/// `path`, replacing its content. The default
/// /dev/termination-log is only written when it exists (inside a container);
/// another path is created. Returns false when the write failed.
bool write_termination_log(const std::string& path, const std::string& cause);

/// Returns "rank 3 exited 1" or "rank 3 killed by SIGSEGV" for a wait status.
std::string describe_exit(int rank, int wait_status);

/// Returns the launcher exit status that stands for a worker's wait status:
/// its exit code, or 128 + the signal that killed it.
int exit_status_of(int wait_status);

/// Returns "SIGTERM" etc. for a signal number ("signal 42" when unnamed).
std::string signal_name(int sig);

}  // namespace ktrain::launch
