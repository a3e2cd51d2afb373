#include "cmd/notify.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "net/curl_transport.h"

namespace ktrain::cmd {

int run_exit_code(const RunStatus& st) {
  if (st.summary.state == RunState::kSucceeded) return 0;
  auto known = [](const RankStatus& r) { return r.exit_code && *r.exit_code != 0; };
  if (st.first_failed >= 0 && static_cast<std::size_t>(st.first_failed) < st.ranks.size() &&
      known(st.ranks[static_cast<std::size_t>(st.first_failed)])) {
    return *st.ranks[static_cast<std::size_t>(st.first_failed)].exit_code;
  }
  std::optional<int> peer_stopped;
  for (const auto& r : st.ranks) {
    if (!known(r)) continue;
    if (*r.exit_code != 75) return *r.exit_code;
    peer_stopped = 75;
  }
  return peer_stopped.value_or(1);
}

std::string notify_payload(const RunStatus& st) {
  const int code = run_exit_code(st);
  std::string text = "ktrain: run " + st.summary.name;
  if (!st.summary.namespace_.empty()) text += " (namespace " + st.summary.namespace_ + ")";
  text +=
      st.summary.state == RunState::kSucceeded
          ? " succeeded"
          : std::string(" ") + to_string(st.summary.state) + ", exit code " + std::to_string(code);
  if (st.summary.state != RunState::kSucceeded && !st.explanations.empty()) {
    text += ": " + st.explanations.front();
  }
  nlohmann::ordered_json j;
  j["run"] = st.summary.name;
  j["namespace"] = st.summary.namespace_;
  j["state"] = to_string(st.summary.state);
  j["exitCode"] = code;
  j["text"] = text;
  return j.dump();
}

namespace {

/// Runs `command` with /bin/sh; returns its wait status, or -1 when it could not be
/// started or ran past `limit` (then killed).
int run_command(const std::string& command, const RunStatus& st, std::chrono::seconds limit,
                std::string& problem) {
  const std::string code = std::to_string(run_exit_code(st));
  const pid_t pid = ::fork();
  if (pid < 0) {
    problem = std::string("cannot start it: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(2, 1);  // stdout is ktrain's (names, JSON): the command's output goes to stderr
    ::setenv("KTRAIN_RUN", st.summary.name.c_str(), 1);
    ::setenv("KTRAIN_NAMESPACE", st.summary.namespace_.c_str(), 1);
    ::setenv("KTRAIN_STATE", to_string(st.summary.state), 1);
    ::setenv("KTRAIN_EXIT_CODE", code.c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) {
      problem = std::string("waitpid: ") + std::strerror(errno);
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      problem = "still running after " + std::to_string(limit.count()) + "s: killed";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

void notify_finish(Env& env, const Notify& n, const RunStatus& st) {
  if (!n.command.empty()) {
    env.err->flush();
    std::string problem;
    const int status = run_command(n.command, st, std::chrono::minutes(5), problem);
    if (status < 0) {
      env.warn("the command for the run's end (" + n.command + "): " + problem);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      env.warn("the command for the run's end (" + n.command + ") " +
               (WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                  : "was killed by signal " + std::to_string(WTERMSIG(status))));
    }
  }
  if (!n.url.empty()) {
    net::Request req;
    req.method = "POST";
    req.url = n.url;
    req.headers = {{"Content-Type", "application/json"}};
    req.body = notify_payload(st);
    req.timeout = std::chrono::seconds(10);
    req.connect_timeout = std::chrono::seconds(5);
    req.log_label = "the webhook of train.notify.url";  // its URL may hold a token
    req.max_body_bytes = 1 << 20;
    net::CurlTransport transport;
    const net::Response r = transport.perform(req);
    if (r.failure != net::TransportFailure::kNone) {
      env.warn("the webhook of train.notify.url: " + net::describe_failure(r, n.url));
    } else if (!r.ok()) {
      env.warn("the webhook of train.notify.url answered " + std::to_string(r.status));
    }
  }
}

}  // namespace ktrain::cmd
