#pragma once
// Where the API server is and who we are to it: the kubeconfig as kubectl reads it
// (--kubeconfig, KUBECONFIG with several files merged, ~/.kube/config; the current
// context, --context, -n), or the in-cluster service-account config when no
// kubeconfig is found.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/env.h"

namespace ktrain::kube {

/// The default folder of the in-cluster service-account files.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A kubeconfig `clusters[].cluster` entry, with file paths made absolute.
struct ClusterInfo {
  std::string server;   ///< https://host:port[/prefix]
  std::string ca_file;  ///< certificate-authority
  std::string ca_pem;   ///< certificate-authority-data, decoded
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;
};

/// A kubeconfig `users[].user.exec` credential plugin.
struct ExecConfig {
  std::string api_version;  ///< client.authentication.k8s.io/v1 or /v1beta1
  std::string command;      ///< made absolute when it names a path relative to the kubeconfig
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
  bool provide_cluster_info = false;
  std::string interactive_mode;  ///< Never, IfAvailable, Always ("" = unset)
};

/// A kubeconfig `users[].user` entry, with file paths made absolute.
struct UserInfo {
  std::string token;
  std::string token_file;
  std::string client_cert_file;
  std::string client_cert_pem;  ///< client-certificate-data, decoded
  std::string client_key_file;
  std::string client_key_pem;  ///< client-key-data, decoded
  std::string username;
  std::string password;
  std::optional<ExecConfig> exec;
  std::string auth_provider;  ///< the name of an auth-provider entry (unsupported), "" = none
};

/// Everything needed to talk to one API server as one user.
struct ClientConfig {
  /// Where it came from, for messages: "kubeconfig /home/u/.kube/config",
  /// "kubeconfig a.yaml:b.yaml" or "in-cluster service account".
  std::string source;
  bool in_cluster = false;
  std::string context_name;
  std::string cluster_name;
  std::string user_name;
  std::string namespace_;  ///< -n, else the context's namespace, else "default"
  ClusterInfo cluster;
  UserInfo user;
};

/// Where to look, besides Env::global (--kubeconfig, --context, -n) and Env::vars
/// (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT).
struct LoadOptions {
  std::string service_account_dir = kServiceAccountDir;
};

/// Loads the client config as kubectl does:
/// - --kubeconfig FILE: only that file (it must exist);
/// - else KUBECONFIG=a:b:c: the files that exist, merged (for each named cluster, user
///   and context, and for current-context, the first file that sets it wins);
/// - else ~/.kube/config when it exists;
/// - else the in-cluster config (service-account token, CA and namespace, and
///   KUBERNETES_SERVICE_HOST/PORT);
/// - else Error (exit 3) saying where it looked.
/// Relative paths in a file are resolved against that file's folder. The context is
/// --context, else current-context. Throws Error naming the file and entry for a missing
/// context/cluster/user or a malformed file.
ClientConfig load_client_config(const Env& env, const LoadOptions& opts = {});

/// Parses the in-cluster config from `dir` and KUBERNETES_SERVICE_HOST/PORT; nullopt when
/// not running in a cluster (the variables or the token file are missing).
std::optional<ClientConfig> load_in_cluster_config(const Env& env, const std::string& dir);

/// Whether `s` holds CR, LF or NUL: a credential that cannot go in an HTTP header.
bool holds_line_break_or_nul(std::string_view s);

/// Standard base64 decoding (whitespace ignored); throws Error on invalid input.
std::string base64_decode(const std::string& in);

/// Standard base64 encoding with padding.
std::string base64_encode(const std::string& in);

}  // namespace ktrain::kube
