#include "oci/layout.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
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
    const fs::path target = blobs / digest_hex(l.desc.digest);
    if (fs::exists(target, ec) && fs::file_size(target, ec) == l.desc.size) continue;
    if (!l.local_path.empty()) {
      fs::copy_file(l.local_path, target, fs::copy_options::overwrite_existing, ec);
      if (ec) throw Error("cannot copy a layer to '" + target.string() + "': " + ec.message());
      continue;
    }
    const fs::path tmp = target.string() + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f) throw Error("cannot write '" + tmp.string() + "': " + std::strerror(errno));
      client.download_blob(base_repo, l.desc.digest, [&](std::string_view d) {
        f.write(d.data(), static_cast<std::streamsize>(d.size()));
        if (!f) throw Error("cannot write '" + tmp.string() + "': " + std::strerror(errno));
      });
    }
    fs::rename(tmp, target);
  }
  const std::string config = img.config_bytes();
  write_text(blobs / digest_hex(sha256_digest(config)), config);
  const std::string manifest = img.manifest_bytes();
  const std::string digest = sha256_digest(manifest);
  write_text(blobs / digest_hex(digest), manifest);

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
