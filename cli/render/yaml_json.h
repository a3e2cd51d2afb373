#pragma once
// YAML <-> JSON for manifests: templates are read from YAML into JSON values (the
// Kubernetes API is JSON), and rendered objects are written back as YAML.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace YAML {
class Node;
}

namespace ktrain::render {

/// Converts a parsed YAML node to JSON, keeping the key order of mappings.
/// Plain scalars are resolved as YAML 1.2's core schema does (null, true/false,
/// integers, floats, else strings); quoted scalars and `!!str` stay strings.
/// Throws Error naming `where` for YAML that has no JSON form (e.g. aliases to keys).
nlohmann::ordered_json yaml_to_json(const YAML::Node& node, const std::string& where);

/// Parses one YAML document from `text` and converts it with yaml_to_json.
/// Throws Error("<where>:<line>:<col>: <problem>") on a syntax error.
nlohmann::ordered_json parse_yaml_document(std::string_view text, const std::string& where);

/// Whether the string `s` must be quoted in YAML to be read back as the same string
/// (by YAML 1.1 and 1.2 readers alike: "true", "yes", "1", "0o1", "~", "null", ": ",
/// leading or trailing spaces, indicator characters, ...).
bool yaml_needs_quotes(std::string_view s);

/// Writes `value` as one block-style YAML document (kubectl's layout: sequences
/// at their key's indentation), ending with a newline. Deterministic.
std::string to_yaml_document(const nlohmann::ordered_json& value);

/// Writes `objects` as a multi-document YAML stream, documents separated by `---`.
std::string to_yaml(const std::vector<nlohmann::ordered_json>& objects);

/// Writes `objects` as kubectl does for several objects: a `v1` `List` with `items`,
/// indented by 2, ending with a newline.
std::string to_json(const std::vector<nlohmann::ordered_json>& objects);

}  // namespace ktrain::render
