#pragma once
// Registry credentials as Docker keeps them: ~/.docker/config.json (`auths` with
// base64 "user:password", `identitytoken`), `credHelpers` and `credsStore` through
// docker-credential-* programs.

#include <functional>
#include <map>
#include <string>

#include "base/env.h"

namespace ktrain::oci {

/// Credentials for one registry, and where they came from (for messages; never the secret).
struct Credentials {
  std::string username;
  std::string password;        ///< or a token used as a password
  std::string identity_token;  ///< OAuth2 refresh token (docker login with a token)
  std::string source;  ///< "anonymous", "~/.docker/config.json (auths)", "docker-credential-pass"
  bool anonymous() const { return username.empty() && password.empty() && identity_token.empty(); }
};

/// Looks up credentials by registry host. Abstract so it can be faked.
class CredentialStore {
 public:
  virtual ~CredentialStore() = default;
  /// The credentials for `registry` ("docker.io", "ghcr.io", "127.0.0.1:5000").
  virtual Credentials lookup(const std::string& registry) = 0;
};

/// Runs a credential helper: argv, stdin text -> (exit status, stdout). Throws Error when
/// the program cannot be started.
using HelperRunner = std::function<std::pair<int, std::string>(const std::vector<std::string>& argv,
                                                               const std::string& input)>;

/// Runs the program through fork/exec with PATH from `env`.
HelperRunner real_helper_runner(const Env& env);

/// Docker's config: $DOCKER_CONFIG/config.json, else ~/.docker/config.json. A missing
/// file means anonymous access.
class DockerConfigCredentials : public CredentialStore {
 public:
  DockerConfigCredentials(Env& env, HelperRunner runner);
  Credentials lookup(const std::string& registry) override;
  /// The config file read (for messages).
  const std::string& path() const { return path_; }

 private:
  Env& env_;
  HelperRunner runner_;
  std::string path_;
};

/// Decodes standard base64 (padding optional); throws Error on bad input.
std::string base64_decode(const std::string& in);
/// Encodes standard base64 with padding.
std::string base64_encode(const std::string& in);

}  // namespace ktrain::oci
