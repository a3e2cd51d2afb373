#pragma once
// An image as a value: manifest + config + layer descriptors. append() makes a new
// image from a base and layers without any I/O; publishing is separate (registry.h,
// layout.h).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oci/layer.h"

namespace ktrain::oci {

namespace media {
inline constexpr char kOciManifest[] = "application/vnd.oci.image.manifest.v1+json";
inline constexpr char kOciIndex[] = "application/vnd.oci.image.index.v1+json";
inline constexpr char kOciConfig[] = "application/vnd.oci.image.config.v1+json";
inline constexpr char kDockerManifest[] = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr char kDockerList[] = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr char kDockerConfig[] = "application/vnd.docker.container.image.v1+json";
}  // namespace media

/// A content descriptor.
struct Descriptor {
  std::string media_type;
  std::string digest;
  std::uint64_t size = 0;
  nlohmann::ordered_json extra;  ///< other fields kept as they were (urls, annotations)
};

/// One layer of an image: its descriptor, and where its bytes are when they are on
/// this machine ("" for base layers, which stay in the registry).
struct Layer {
  Descriptor desc;
  std::string local_path;
  bool cached = false;  ///< local_path is in the layer cache: re-hashed before it is sent
};

/// An immutable image.
struct Image {
  nlohmann::ordered_json
      config;  ///< the image configuration (os, architecture, config, rootfs, history)
  std::vector<Layer> layers;
  nlohmann::ordered_json annotations;  ///< manifest annotations (object or null)

  /// The config as bytes (compact JSON, deterministic).
  std::string config_bytes() const;
  /// The config's descriptor.
  Descriptor config_descriptor() const;
  /// The OCI image manifest as bytes.
  std::string manifest_bytes() const;
  /// The manifest's digest: the image's identity.
  std::string digest() const;
};

/// What the new layers change in the config.
struct ConfigChanges {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;  ///< replaces the base's Cmd (empty = none)
  std::string working_dir;
  std::vector<std::pair<std::string, std::string>> env;  ///< set (replacing same names)
  std::vector<std::pair<std::string, std::string>> labels;
  std::string created;  ///< RFC 3339 time for config.created and history ("" = epoch 0)
};

/// One new layer and its history comment.
struct NewLayer {
  LayerBlob blob;
  std::string created_by;  ///< history created_by
};

/// The config descriptor of a base image's manifest (OCI or Docker schema 2), its
/// digest checked with checked_digest. Throws Error when the manifest is not JSON, has
/// no config, or its digest is not a sha256 digest.
Descriptor manifest_config(const std::string& manifest);

/// Parses an image from its manifest (OCI or Docker schema 2) and config bytes; base
/// layer media types are mapped to their OCI names. Throws Error on a malformed
/// manifest, a layer or config digest that is not a sha256 digest (checked_digest),
/// or config bytes that do not match the manifest's config digest.
Image image_from_manifest(const std::string& manifest, const std::string& config);

/// The base plus `layers`, with `changes` applied to the config. Does no I/O.
Image append(const Image& base, const std::vector<NewLayer>& layers, const ConfigChanges& changes);

/// RFC 3339 (UTC, seconds) for `epoch_seconds`.
std::string rfc3339(std::int64_t epoch_seconds);

}  // namespace ktrain::oci
