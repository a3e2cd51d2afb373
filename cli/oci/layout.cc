#include "oci/layout.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "oci/blob_file.h"
#include "oci/digest.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write '" + p.string() + "': " + std::strerror(errno));
    f << text;
    if (!f) throw Error("cannot write '" + p.string() + "': " + std::strerror(errno));
  }
  fs::rename(tmp, p);
}

}  // namespace

void write_layout(const std::string& dir, const Image& img, RegistryClient& client,
                  const Repo& base_repo, const std::string& ref_name) {
  const fs::path root(dir);
  const fs::path blobs = root / "blobs" / "sha256";
  std::error_code ec;
  fs::create_directories(blobs, ec);
  if (ec) throw Error("cannot create '" + blobs.string() + "': " + ec.message());
  write_text(root / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  for (const auto& l : img.layers) {
    const fs::path target =
        blobs / digest_hex(l.desc.digest, "writing the OCI layout '" + dir + "'");
    if (fs::exists(target, ec) && fs::file_size(target, ec) == l.desc.size) continue;
    // Written beside the target and renamed once verified: a blob that does not match
    // its digest leaves nothing in blobs/sha256.
    if (!l.local_path.empty()) {
      copy_blob_file(l.local_path, l.desc.digest, l.desc.size, target.string());
    } else {
      download_blob_file(client, base_repo, l.desc.digest, l.desc.size, target.string());
    }
  }
  const std::string config = img.config_bytes();
  write_text(blobs / digest_hex(sha256_digest(config), "the image config"), config);
  const std::string manifest = img.manifest_bytes();
  const std::string digest = sha256_digest(manifest);
  write_text(blobs / digest_hex(digest, "the image manifest"), manifest);

  nlohmann::ordered_json index = {{"schemaVersion", 2},
                                  {"mediaType", media::kOciIndex},
                                  {"manifests", nlohmann::ordered_json::array()}};
  if (fs::exists(root / "index.json", ec)) {
    std::ifstream f(root / "index.json");
    std::stringstream s;
    s << f.rdbuf();
    try {
      auto old = nlohmann::ordered_json::parse(s.str());
      for (const auto& m : old.value("manifests", nlohmann::ordered_json::array())) {
        const bool same_name =
            !ref_name.empty() && m.contains("annotations") &&
            m["annotations"].value("org.opencontainers.image.ref.name", "") == ref_name;
        if (!same_name && m.value("digest", "") != digest) index["manifests"].push_back(m);
      }
    } catch (const nlohmann::json::exception&) {
      throw Error("'" + (root / "index.json").string() +
                  "' is not valid JSON; use an empty folder");
    }
  }
  nlohmann::ordered_json desc = {
      {"mediaType", media::kOciManifest}, {"digest", digest}, {"size", manifest.size()}};
  if (!ref_name.empty()) desc["annotations"] = {{"org.opencontainers.image.ref.name", ref_name}};
  index["manifests"].push_back(desc);
  write_text(root / "index.json", index.dump());
}

}  // namespace ktrain::oci
