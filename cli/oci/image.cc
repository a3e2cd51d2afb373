#include "oci/image.h"

#include <ctime>

#include "base/error.h"
#include "oci/digest.h"

namespace ktrain::oci {

namespace {

std::string to_oci_layer_type(const std::string& t) {
  if (t == "application/vnd.docker.image.rootfs.diff.tar.gzip")
    return "application/vnd.oci.image.layer.v1.tar+gzip";
  if (t == "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip")
    return "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip";
  if (t == "application/vnd.docker.image.rootfs.diff.tar")
    return "application/vnd.oci.image.layer.v1.tar";
  return t;
}

nlohmann::ordered_json descriptor_json(const Descriptor& d) {
  nlohmann::ordered_json j;
  j["mediaType"] = d.media_type;
  j["digest"] = d.digest;
  j["size"] = d.size;
  if (d.extra.is_object()) {
    for (const auto& [k, v] : d.extra.items()) j[k] = v;
  }
  return j;
}

}  // namespace

std::string rfc3339(std::int64_t epoch_seconds) {
  std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Image::config_bytes() const {
  return config.dump();
}

Descriptor Image::config_descriptor() const {
  const std::string bytes = config_bytes();
  return Descriptor{media::kOciConfig, sha256_digest(bytes), bytes.size(), {}};
}

std::string Image::manifest_bytes() const {
  nlohmann::ordered_json m;
  m["schemaVersion"] = 2;
  m["mediaType"] = media::kOciManifest;
  m["config"] = descriptor_json(config_descriptor());
  m["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : layers) m["layers"].push_back(descriptor_json(l.desc));
  if (annotations.is_object() && !annotations.empty()) m["annotations"] = annotations;
  return m.dump();
}

std::string Image::digest() const {
  return sha256_digest(manifest_bytes());
}

Descriptor manifest_config(const std::string& manifest) {
  Descriptor d;
  try {
    const auto m = nlohmann::ordered_json::parse(manifest);
    const auto& c = m.at("config");
    d.media_type = c.value("mediaType", "");
    d.digest = c.at("digest").get<std::string>();
    d.size = c.at("size").get<std::uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the base image's manifest has no valid config: ") + e.what());
  }
  checked_digest(d.digest, "the base image's manifest: the config");
  return d;
}

Image image_from_manifest(const std::string& manifest, const std::string& config) {
  Image img;
  std::string config_digest;
  try {
    auto m = nlohmann::ordered_json::parse(manifest);
    config_digest = m.at("config").at("digest").get<std::string>();
    img.config = nlohmann::ordered_json::parse(config);
    for (const auto& l : m.at("layers")) {
      Layer layer;
      layer.desc.media_type = to_oci_layer_type(l.at("mediaType").get<std::string>());
      layer.desc.digest = l.at("digest").get<std::string>();
      layer.desc.size = l.at("size").get<std::uint64_t>();
      for (const auto& [k, v] : l.items()) {
        if (k != "mediaType" && k != "digest" && k != "size") layer.desc.extra[k] = v;
      }
      checked_digest(layer.desc.digest,
                     "the base image's manifest: layer " + std::to_string(img.layers.size() + 1));
      img.layers.push_back(std::move(layer));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the base image's manifest or config is not valid: ") + e.what());
  }
  checked_digest(config_digest, "the base image's manifest: the config");
  if (sha256_digest(config) != config_digest) {
    throw Error("the base image's config does not match its digest " + config_digest + " (it is " +
                sha256_digest(config) + ")");
  }
  if (!img.config.is_object()) throw Error("the base image's config is not a JSON object");
  return img;
}

Image append(const Image& base, const std::vector<NewLayer>& layers, const ConfigChanges& changes) {
  Image img = base;
  auto& cfg = img.config;
  const std::string created = changes.created.empty() ? rfc3339(0) : changes.created;
  if (!cfg.contains("rootfs") || !cfg["rootfs"].is_object()) {
    cfg["rootfs"] = {{"type", "layers"}, {"diff_ids", nlohmann::ordered_json::array()}};
  }
  if (!cfg.contains("history") || !cfg["history"].is_array()) {
    cfg["history"] = nlohmann::ordered_json::array();
  }
  for (const auto& nl : layers) {
    Layer l;
    l.desc = Descriptor{nl.blob.media_type, nl.blob.digest, nl.blob.size, {}};
    l.local_path = nl.blob.path;
    l.cached = nl.blob.from_cache;
    img.layers.push_back(l);
    cfg["rootfs"]["diff_ids"].push_back(nl.blob.diff_id);
    cfg["history"].push_back(
        {{"created", created}, {"created_by", nl.created_by}, {"comment", "ktrain build"}});
  }
  cfg["created"] = created;
  auto& c = cfg["config"];
  if (!c.is_object()) c = nlohmann::ordered_json::object();
  if (!changes.entrypoint.empty()) c["Entrypoint"] = changes.entrypoint;
  if (changes.cmd.empty()) {
    c.erase("Cmd");
  } else {
    c["Cmd"] = changes.cmd;
  }
  if (!changes.working_dir.empty()) c["WorkingDir"] = changes.working_dir;
  if (!changes.env.empty()) {
    nlohmann::ordered_json env =
        c.contains("Env") && c["Env"].is_array() ? c["Env"] : nlohmann::ordered_json::array();
    for (const auto& [k, v] : changes.env) {
      const std::string prefix = k + "=";
      bool replaced = false;
      for (auto& e : env) {
        if (e.is_string() && e.get<std::string>().rfind(prefix, 0) == 0) {
          e = prefix + v;
          replaced = true;
        }
      }
      if (!replaced) env.push_back(prefix + v);
    }
    c["Env"] = env;
  }
  if (!changes.labels.empty()) {
    if (!c.contains("Labels") || !c["Labels"].is_object())
      c["Labels"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : changes.labels) c["Labels"][k] = v;
  }
  return img;
}

}  // namespace ktrain::oci
