#include "runtime/spawner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <set>

extern char** environ;

namespace ktrain::launch {

void withhold_from_environment() {
  for (const char* name : kWithheldVariables) {
    const size_t len = std::strlen(name);
    std::vector<char*> entries;
    for (char** e = environ; e && *e; ++e) {
      if (std::strncmp(*e, name, len) == 0 && (*e)[len] == '=') entries.push_back(*e);
    }
    ::unsetenv(name);
    // The text stays where the kernel put it (what /proc/PID/environ shows) or
    // where setenv() copied it; unsetenv() only drops the pointers.
    for (char* entry : entries) std::memset(entry, 0, std::strlen(entry));
  }
}

std::vector<std::string> merge_environment(
    char** base, const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::set<std::string> names;
  for (const auto& [k, v] : overrides) names.insert(k);
  const std::set<std::string> withheld(std::begin(kWithheldVariables),
                                       std::end(kWithheldVariables));
  std::vector<std::string> out;
  for (char** e = base; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    if (names.count(name) || withheld.count(name)) continue;
    out.emplace_back(*e);
  }
  for (const auto& [k, v] : overrides) {
    if (!withheld.count(k)) out.push_back(k + "=" + v);
  }
  return out;
}

pid_t ProcessSpawner::spawn(const SpawnRequest& request) {
  if (request.argv.empty()) {
    errno = EINVAL;
    return -1;
  }
  // Everything the child needs is built before fork: the child only calls
  // async-signal-safe functions until exec.
  std::vector<std::string> env_strings = merge_environment(environ, request.env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = request.argv;
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string exec_failed = "ktrain-launch: cannot run '" + args[0] + "': ";

  // Signals stay blocked across fork until the child has dropped the launcher's
  // handlers: a signal caught in between would run the launcher's handler in the
  // child, which writes to the launcher's self-pipe.
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    errno = e;
    return -1;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (request.stdout_fd >= 0) ::dup2(request.stdout_fd, STDOUT_FILENO);
    if (request.stderr_fd >= 0) ::dup2(request.stderr_fd, STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    const char* why = ::strerror(e);
    ssize_t ignored = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    ignored = ::write(STDERR_FILENO, why, std::strlen(why));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    ::_exit(e == ENOENT ? 127 : 126);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::setpgid(pid, pid);  // also here, so the group exists before any signal is sent
  return pid;
}

std::string find_on_path(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  std::string path;
  for (const auto& [k, v] : env) {
    if (k == "PATH") path = v;
  }
  if (path.empty()) {
    const char* p = std::getenv("PATH");
    path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty()) {
      std::string full = dir + "/" + name;
      if (::access(full.c_str(), X_OK) == 0) return full;
    }
    start = end + 1;
  }
  return "";
}

}  // namespace ktrain::launch
