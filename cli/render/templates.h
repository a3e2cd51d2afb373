#pragma once
// The skeletons of templates/, embedded in the binary at build time
// (cli/render/tools/embed_templates.cc).

#include <string>
#include <vector>

namespace ktrain::render {

/// One file of templates/.
struct EmbeddedTemplate {
  const char* name;     ///< file name, e.g. "job.yaml"
  const char* content;  ///< its YAML text
  const char* json;     ///< the same, converted to JSON at build time (what render reads)
};

/// Every embedded template, sorted by name.
const std::vector<EmbeddedTemplate>& embedded_templates();

}  // namespace ktrain::render
