#pragma once
// The skeletons of templates/, embedded in the binary at build time
// (cmake/embed_templates.cmake).

#include <string>
#include <vector>

namespace ktrain::render {

/// One file of templates/.
struct EmbeddedTemplate {
  const char* name;     ///< file name, e.g. "job.yaml"
  const char* content;  ///< its YAML text
};

/// Every embedded template, sorted by name.
const std::vector<EmbeddedTemplate>& embedded_templates();

}  // namespace ktrain::render
