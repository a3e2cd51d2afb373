#pragma once
// Credentials of a kubeconfig user (or the in-cluster service account) applied to
// requests: bearer token, token file, client certificate, basic auth, and exec
// credential plugins (client.authentication.k8s.io/v1 and v1beta1), cached until
// their expirationTimestamp.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "base/env.h"
#include "kube/kubeconfig.h"
#include "kube/process.h"
#include "net/http.h"

namespace ktrain::kube {

/// What an exec plugin returned (ExecCredential.status).
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expires;
};

/// Runs an exec credential plugin and parses its ExecCredential. `stderr` of the plugin
/// is passed through to env.err. Throws Error (exit 3) when the plugin is missing (with
/// its installHint), fails, or prints something that is not an ExecCredential of the
/// configured apiVersion.
ExecCredential run_exec_plugin(const ClientConfig& cfg, const Env& env, ProcessRunner& runner);

/// The KUBERNETES_EXEC_INFO value given to an exec plugin of `cfg`.
std::string exec_info_json(const ClientConfig& cfg, const Env& env);

/// Applies one user's credentials to requests. Thread-safe.
class Credentials {
 public:
  /// Reads certificate and key files now; throws Error (exit 3) for an auth-provider
  /// user (pointing to exec plugins) or unreadable files.
  Credentials(const ClientConfig& cfg, const Env& env, ProcessRunner& runner);

  /// Adds the Authorization header and the client certificate and key to `req`, running
  /// the exec plugin when it has no valid cached credential.
  void apply(net::Request& req);

  /// After a 401: forgets cached credentials. True when asking again may help (an exec
  /// plugin, or a token file that may have been rotated), i.e. the request is worth
  /// one more try.
  bool invalidate();

  /// How the user authenticates, for messages: "bearer token", "exec plugin aws", ...
  std::string kind() const;

 private:
  const ClientConfig& cfg_;
  const Env& env_;
  ProcessRunner& runner_;
  std::string cert_pem_;
  std::string key_pem_;
  std::mutex mu_;
  std::optional<ExecCredential> exec_cache_;
  std::optional<std::string> file_token_;
};

}  // namespace ktrain::kube
