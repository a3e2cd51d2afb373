// Pushing and reading images in registries (oci/publish.h).
#include "oci/publish.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/image_ref.h"
#include "oci/blob_file.h"
#include "oci/digest.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

RegistrySession::RegistrySession(Env& env, const std::vector<std::string>& insecure_registries,
                                 bool retry)
    : creds_(env, real_helper_runner(env)) {
  net::HttpTransport* transport = &curl_;
  if (retry) {
    net::RetryPolicy p;
    p.max_attempts = 4;
    retrying_ = std::make_unique<net::RetryingTransport>(curl_, *env.clock, p);
    transport = retrying_.get();
  }
  if (env.global.verbose > 0) {
    logging_ = std::make_unique<net::LoggingTransport>(*transport, *env.err, *env.clock,
                                                       env.global.verbose);
    transport = logging_.get();
  }
  RegistryOptions ro;
  ro.insecure_hosts = insecure_registries;
  client_ = std::make_unique<RegistryClient>(*transport, creds_, ro);
}

namespace {

/// Uploads the file at `path` as blob `digest` of `size` bytes.
void upload_file(RegistryClient& client, const Repo& repo, const std::string& digest,
                 std::uint64_t size, const std::string& path,
                 const std::function<void(std::uint64_t)>& progress) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error("cannot read '" + path + "'");
  try {
    client.upload_blob(
        repo, digest, size,
        [&](std::uint64_t off, char* buf, std::size_t len) -> std::size_t {
          if (::fseeko(f, static_cast<off_t>(off), SEEK_SET) != 0) return 0;
          return std::fread(buf, 1, len, f);
        },
        progress);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  std::fclose(f);
}

/// Checks that a layer reused from the cache still has its digest and size before it is
/// sent: a blob changed on disk is dropped from the cache (the next build makes it
/// again) and the push stops.
void verify_cached_layer(const Layer& l) {
  std::uint64_t size = 0;
  const std::string got = sha256_file(l.local_path, &size);
  if (got == l.desc.digest && size == l.desc.size) return;
  std::error_code ec;
  fs::remove(l.local_path, ec);
  throw Error("the cached layer '" + l.local_path + "' does not match its digest " + l.desc.digest +
              " (it is " + got + ", " + std::to_string(size) +
              " bytes): it changed on disk and was dropped from the cache; build again");
}

}  // namespace

std::uint64_t push_image(RegistryClient& client, const Image& img, const Repo& repo,
                         const Repo& base_repo, const std::vector<std::string>& tags,
                         const std::string& skip, const std::string& tmp_dir, Progress& progress) {
  std::uint64_t present = 0;
  for (const auto& l : img.layers) {
    const std::string short_digest = l.desc.digest.substr(0, 19);
    if (!skip.empty() && l.desc.digest == skip) continue;
    if (client.blob_exists(repo, l.desc.digest)) {
      ++present;
      continue;
    }
    if (l.local_path.empty()) {
      if (base_repo.registry == repo.registry &&
          client.mount_blob(repo, l.desc.digest, base_repo.repository)) {
        progress.step("mounted base layer " + short_digest + " from " + base_repo.repository);
        continue;
      }
      // Another registry: copy the base layer through a temporary file, verified.
      const std::string copy = tmp_dir + "/" + digest_hex(l.desc.digest, "copying a base layer");
      download_blob_file(client, base_repo, l.desc.digest, l.desc.size, copy, 0600);
      upload_file(client, repo, l.desc.digest, l.desc.size, copy, nullptr);
      std::error_code ec;
      fs::remove(copy, ec);
      progress.step("copied base layer " + short_digest + " (" +
                    human_bytes(static_cast<double>(l.desc.size)) + ")");
      continue;
    }
    if (l.cached) verify_cached_layer(l);
    const std::string what = "uploading " + short_digest;
    const auto began = std::chrono::steady_clock::now();
    upload_file(client, repo, l.desc.digest, l.desc.size, l.local_path,
                [&](std::uint64_t n) { progress.bytes(what, n); });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const std::string rate = Progress::rate(static_cast<double>(l.desc.size), secs);
    progress.step("uploaded layer " + short_digest + " (" +
                  human_bytes(static_cast<double>(l.desc.size)) +
                  (rate.empty() ? "" : ", " + rate) + ")");
  }
  const Descriptor cfg = img.config_descriptor();
  if (!client.blob_exists(repo, cfg.digest)) {
    const std::string bytes = img.config_bytes();
    client.upload_blob(repo, cfg.digest, bytes.size(),
                       [&](std::uint64_t off, char* buf, std::size_t len) -> std::size_t {
                         if (off >= bytes.size()) return 0;
                         std::size_t n =
                             std::min(len, bytes.size() - static_cast<std::size_t>(off));
                         std::memcpy(buf, bytes.data() + off, n);
                         return n;
                       });
  }
  const std::string manifest = img.manifest_bytes();
  const std::string digest = img.digest();
  if (!client.manifest_exists(repo, digest)) {
    client.put_manifest(repo, digest, media::kOciManifest, manifest);
  }
  for (const auto& t : tags) client.put_manifest(repo, t, media::kOciManifest, manifest);
  progress.step("pushed " + repo.str() + "@" + digest + ": uploaded " +
                human_bytes(static_cast<double>(client.bytes_uploaded())) + ", " +
                std::to_string(present) + " of " + std::to_string(img.layers.size()) +
                " layers already there");
  return client.bytes_uploaded();
}

std::optional<ImageCuda> inspect_image_cuda(Env& env, const std::string& image,
                                            const std::vector<std::string>& insecure_registries,
                                            const std::string& platform) {
  const ImageRef ref = parse_image_ref(image);
  RegistrySession session(env, insecure_registries, /*retry=*/false);
  RegistryClient& client = session.client();
  return with_context("reading the config of " + ref.str(), [&] {
    const ManifestBytes m = client.get_manifest(ref, platform);
    const Descriptor cfg = manifest_config(m.bytes);
    const std::string config = client.get_blob({ref.registry, ref.repository}, cfg.digest,
                                               static_cast<std::int64_t>(cfg.size));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(config);
    } catch (const nlohmann::json::exception&) {
      throw Error("the image config is not JSON");
    }
    return j.is_object() && j.contains("config") ? image_cuda(j["config"]) : std::nullopt;
  });
}

}  // namespace ktrain::oci
