#pragma once
// Publishing an image as an OCI image layout folder (--output oci:DIR).

#include <functional>
#include <string>

#include "oci/image.h"
#include "oci/registry.h"

namespace ktrain::oci {

/// Writes `img` into the OCI image layout at `dir` (created when missing; an existing
/// layout keeps its other images): oci-layout, index.json, blobs/sha256/*. Local layers
/// are copied; base layers are downloaded from `base_repo` through `client` (streamed).
/// `ref_name` becomes the org.opencontainers.image.ref.name annotation when not empty.
void write_layout(const std::string& dir, const Image& img, RegistryClient& client,
                  const Repo& base_repo, const std::string& ref_name);

}  // namespace ktrain::oci
