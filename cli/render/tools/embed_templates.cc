// Build-time tool: writes the C++ file behind render/templates.h, which embeds every
// skeleton of templates/ in ktrain, both as its YAML text and as the JSON that render
// starts from. The JSON is converted here, at build time, with the same code that reads
// --templates folders at run time (render/yaml_json.cc), so that ktrain does not parse
// YAML for its own skeletons on every run.
//
// Usage: ktrain-embed-templates OUT.cc TEMPLATES_DIR
// A template that is not valid YAML, or not a mapping, fails the build with its place.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "render/yaml_json.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kDelimiter = "ktrain_template";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof()) throw ktrain::Error("cannot read " + p.string());
  return s.str();
}

/// A C++ raw string literal holding `text`.
std::string raw_literal(const std::string& text) {
  if (text.find(std::string(")") + kDelimiter + "\"") != std::string::npos) {
    throw ktrain::Error("a template contains the literal's delimiter");
  }
  return std::string("R\"") + kDelimiter + "(" + text + ")" + kDelimiter + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: ktrain-embed-templates OUT.cc TEMPLATES_DIR\n";
    return 2;
  }
  const fs::path out_path = argv[1];
  const fs::path dir = argv[2];
  try {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() == ".yaml") {
        names.push_back(e.path().filename().string());
      }
    }
    std::sort(names.begin(), names.end());
    std::string body =
        "// Generated from templates/ by ktrain-embed-templates "
        "(cli/render/tools/embed_templates.cc). Do not edit.\n"
        "#include \"render/templates.h\"\n\nnamespace ktrain::render {\n\n"
        "const std::vector<EmbeddedTemplate>& embedded_templates() {\n"
        "  static const std::vector<EmbeddedTemplate> all = {\n";
    for (const auto& name : names) {
      const std::string yaml = read_file(dir / name);
      const auto json = ktrain::render::parse_yaml_document(yaml, "templates/" + name);
      if (!json.is_object()) {
        throw ktrain::Error("templates/" + name + ": a template must be a YAML mapping");
      }
      body += "      {\"" + name + "\",\n       " + raw_literal(yaml) + ",\n       " +
              raw_literal(json.dump()) + "},\n";
    }
    body += "  };\n  return all;\n}\n\n}  // namespace ktrain::render\n";
    // Only rewrite when the content changed, so that nothing rebuilds needlessly.
    std::error_code ec;
    if (fs::exists(out_path, ec) && read_file(out_path) == body) return 0;
    fs::create_directories(out_path.parent_path(), ec);
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    out << body;
    if (!out) throw ktrain::Error("cannot write " + out_path.string());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ktrain-embed-templates: " << e.what() << "\n";
    return 1;
  }
}
