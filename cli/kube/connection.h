#pragma once
// The real stack that talks to a cluster: kubeconfig -> credentials -> retries ->
// (-v logging) -> libcurl, owned in one place.

#include <memory>

#include "base/env.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/process.h"
#include "net/curl_transport.h"
#include "net/log.h"
#include "net/retry.h"

namespace ktrain::kube {

/// The environment variable that replaces the in-cluster service-account folder (tests).
inline constexpr const char* kServiceAccountDirVar = "KTRAIN_SERVICEACCOUNT_DIR";

/// Owns a Client on the real transport: CurlTransport, wrapped by LoggingTransport with
/// -v (each attempt logged), wrapped by RetryingTransport.
class Connection {
 public:
  /// Loads the client config from `env` (kubeconfig flags and variables, or in-cluster)
  /// and builds the stack. `env` must outlive this. Throws Error (exit 3) when no cluster
  /// is configured or the credentials cannot be used.
  explicit Connection(Env& env);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// The client.
  Client& client() { return *client_; }

 private:
  RealProcessRunner runner_;
  std::unique_ptr<net::CurlTransport> curl_;
  std::unique_ptr<net::LoggingTransport> log_;
  std::unique_ptr<net::RetryingTransport> retry_;
  std::unique_ptr<Client> client_;
};

}  // namespace ktrain::kube
