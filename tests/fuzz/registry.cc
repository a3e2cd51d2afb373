// Fuzzes what a registry answers when a base image is pulled: the WWW-Authenticate
// challenge of a 401, the token service's answer, the manifest or index fetched by tag
// (resolved to linux/amd64), and then the platform manifest and config as `ktrain
// build` reads them (image_from_manifest) and appends a layer to them.
//
// Input: five parts separated by "\n----\n": the challenge ("" = no 401), the token
// answer, the manifest or index for the tag, the platform manifest, the config. The
// platform manifest's config digest is set to the config's (when it names one), so
// that the config is read.
// Expected: ktrain::Error.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/image_ref.h"
#include "fuzz_input.h"
#include "oci/credentials.h"
#include "oci/digest.h"
#include "oci/image.h"
#include "oci/registry.h"

namespace {

class FixedCredentials : public ktrain::oci::CredentialStore {
 public:
  ktrain::oci::Credentials lookup(const std::string&) override {
    return {"user", "password", "", "test"};
  }
};

// Answers as the input says; never reaches a network.
class FuzzRegistry : public ktrain::net::HttpTransport {
 public:
  explicit FuzzRegistry(const std::vector<std::string>& parts) : parts_(parts) {}
  ktrain::net::Response perform(const ktrain::net::Request& req) override {
    ktrain::net::Response r;
    if (++requests_ > 16) {
      r.failure = ktrain::net::TransportFailure::kConnect;
      return r;
    }
    const bool manifest = req.url.find("/v2/") != std::string::npos;
    bool authorized = parts_[0].empty();
    for (const auto& [k, v] : req.headers) authorized = authorized || k == "Authorization";
    if (!manifest) {
      r.status = 200;
      r.body = parts_[1];
    } else if (!authorized) {
      r.status = 401;
      r.headers = {{"WWW-Authenticate", parts_[0]}};
    } else {
      r.status = 200;
      const bool by_digest = req.url.find("/manifests/sha256:") != std::string::npos;
      r.body = by_digest ? parts_[3] : parts_[2];
    }
    if (req.on_headers) req.on_headers(r.status, r.headers);
    if (req.on_data && !r.body.empty()) {
      if (!req.on_data(r.body)) r.failure = ktrain::net::TransportFailure::kAborted;
      r.body.clear();
    }
    return r;
  }
  std::vector<ktrain::net::Response> perform_all(
      const std::vector<ktrain::net::Request>& reqs) override {
    std::vector<ktrain::net::Response> out;
    for (const auto& r : reqs) out.push_back(perform(r));
    return out;
  }

 private:
  const std::vector<std::string>& parts_;
  int requests_ = 0;
};

// The platform manifest with its config digest set to the config's.
std::string with_config_digest(const std::string& manifest, const std::string& config) {
  auto m = nlohmann::ordered_json::parse(manifest, nullptr, false);
  if (!m.is_object()) return manifest;
  auto c = m.find("config");
  if (c == m.end() || !c->is_object()) return manifest;
  (*c)["digest"] = ktrain::oci::sha256_digest(config);
  return m.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 5);
  FixedCredentials creds;
  FuzzRegistry transport(parts);
  ktrain::oci::RegistryClient client(transport, creds);
  try {
    (void)client.get_manifest(ktrain::parse_image_ref("registry.test/team/base:v1"), "linux/amd64");
  } catch (const ktrain::Error&) {
  }
  try {
    (void)ktrain::oci::manifest_config(parts[3]);
  } catch (const ktrain::Error&) {
  }
  try {
    auto base = ktrain::oci::image_from_manifest(with_config_digest(parts[3], parts[4]), parts[4]);
    ktrain::oci::ConfigChanges changes;
    changes.working_dir = "/workspace";
    changes.env = {{"PATH", "/opt/ktrain/bin:/usr/bin"}, {"KTRAIN", "1"}};
    changes.labels = {{"org.opencontainers.image.source", "ktrain"}};
    changes.cmd = {"python", "train.py"};
    auto img = ktrain::oci::append(base, {}, changes);
    (void)img.manifest_bytes();
  } catch (const ktrain::Error&) {
  }
  return 0;
}
