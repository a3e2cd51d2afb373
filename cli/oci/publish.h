#pragma once
// Talking to registries for a build: the registry client with the transports under it
// (libcurl, retries, the -v log) and the user's credentials; pushing an image by digest
// and tags; reading what a remote image says of the CUDA version it needs.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cuda.h"
#include "base/env.h"
#include "base/progress.h"
#include "net/curl_transport.h"
#include "net/log.h"
#include "net/retry.h"
#include "oci/credentials.h"
#include "oci/image.h"
#include "oci/registry.h"

namespace ktrain::oci {

/// A registry client and what it stands on. With `retry`, a failed request is tried up
/// to four times (a build's pushes); with -v, every request is logged on stderr.
class RegistrySession {
 public:
  RegistrySession(Env& env, const std::vector<std::string>& insecure_registries, bool retry);
  RegistrySession(const RegistrySession&) = delete;
  RegistrySession& operator=(const RegistrySession&) = delete;

  RegistryClient& client() { return *client_; }

 private:
  net::CurlTransport curl_;
  std::unique_ptr<net::RetryingTransport> retrying_;
  std::unique_ptr<net::LoggingTransport> logging_;
  DockerConfigCredentials creds_;
  std::unique_ptr<RegistryClient> client_;
};

/// Pushes `img` to `repo`: the blobs the registry lacks (base layers mounted from
/// `base_repo` on the same registry, else copied through `tmp_dir`; cached layers
/// checked against their digest first), the config, then the manifest by digest and
/// under each of `tags`. `skip` is a layer digest already uploaded ("" for none).
/// Returns the bytes uploaded.
std::uint64_t push_image(RegistryClient& client, const Image& img, const Repo& repo,
                         const Repo& base_repo, const std::vector<std::string>& tags,
                         const std::string& skip, const std::string& tmp_dir, Progress& progress);

/// The CUDA version that `image` says it needs (base/cuda.h: its label dev.ktrain.cuda,
/// CUDA_VERSION, ...), read from its registry, for `platform`; nullopt when it says none.
/// Throws Error when the image cannot be read (unknown, unreachable, refused).
std::optional<ImageCuda> inspect_image_cuda(Env& env, const std::string& image,
                                            const std::vector<std::string>& insecure_registries,
                                            const std::string& platform = "linux/amd64");

}  // namespace ktrain::oci
