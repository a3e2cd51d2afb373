#pragma once
// The API server's streaming subresources over WebSocket: a command in a pod's
// container (pods/exec, v5.channel.k8s.io, which Kubernetes 1.30+ serves: stdin,
// stdout, stderr, the exit status, terminal resizes and the end of stdin), and a TCP
// connection to a pod's port (pods/portforward, v4.channel.k8s.io, the kubelet's
// WebSocket protocol, which the API server passes through: what port-forward falls back
// to where the server has no SPDY tunnel, see kube/port_forward.h).

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/client.h"

namespace ktrain::kube {

/// The exec subprotocol ktrain speaks.
inline constexpr const char* kExecProtocol = "v5.channel.k8s.io";
/// The port-forward subprotocol ktrain speaks.
inline constexpr const char* kPortForwardProtocol = "v4.channel.k8s.io";

/// A terminal size (columns, rows).
struct TermSize {
  int width = 0;
  int height = 0;
};

/// What to run, where, and with which streams.
struct ExecRequest {
  std::string ns;
  std::string pod;
  std::string container;  ///< "" = the pod's only container
  std::vector<std::string> command;
  bool stdin = false;  ///< send in_fd to the command, then its end
  bool tty = false;    ///< a terminal: stderr comes on stdout, resizes are sent
  int in_fd = 0;
  int out_fd = 1;
  int err_fd = 2;
  /// The terminal's size now (with tty), sent first and again on each resize.
  std::function<std::optional<TermSize>()> term_size;
  /// With tty: a file descriptor that becomes readable (one byte each) when the terminal
  /// was resized (a SIGWINCH handler writes to a pipe); -1 = none.
  int resize_fd = -1;
  /// How long the command may take, from the stream's opening (0 = no limit): then
  /// exec() closes the stream and throws Error (exit 3). For ktrain's own short
  /// commands in a pod, which must not hang the verb that asked.
  std::chrono::milliseconds timeout{0};
};

/// The end of an exec: the command's exit status, or why it did not run.
struct ExecResult {
  int exit_code = 0;    ///< the command's exit status (0..255)
  std::string message;  ///< when it could not run or its status is unknown: why
};

/// The exit status that the error channel's metav1.Status `status` stands for: 0 for
/// Success, N for a NonZeroExitCode with cause ExitCode N; otherwise nullopt, with
/// `message` set to the server's words.
std::optional<int> exec_status_code(const nlohmann::json& status, std::string& message);

/// Runs `req` and relays its streams until the command ends. Throws ApiError when the
/// server refuses (no such pod, forbidden, not running), Error naming the server's
/// version when it does not speak v5.channel.k8s.io (before 1.30), and Error when the
/// connection is lost before the command's status arrives.
ExecResult exec(Client& client, const ExecRequest& req);

/// A port-forward of one TCP connection: relays `fd` (a connected socket) to `port` of
/// `pod` until either side closes. Returns "" after a normal end, or why it ended
/// (the server's error for that connection: nothing listens there, the pod went).
/// Throws ApiError/Error when the stream cannot be opened.
std::string forward_connection(Client& client, const std::string& ns, const std::string& pod,
                               int port, int fd);

}  // namespace ktrain::kube
