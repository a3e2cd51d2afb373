#pragma once
// The JSON Schema (draft-07) of ktrain.yaml, generated from the key table that the
// parser also uses (project/schema_table.h), for editors such as yaml-language-server.

#include <string>

#include <nlohmann/json.hpp>

namespace ktrain::project {

/// The schema's $id: https://ktrain.dev/schema/ktrain.yaml/<version>.json.
std::string project_schema_id();

/// The JSON Schema of the project file: every section's keys with their types, enums,
/// patterns and descriptions, `additionalProperties: false` on fixed sections, the
/// keys the parser requires, and the cross-field rules that draft-07 can say.
/// Rules it cannot say (min <= max, distinct mount paths, sweep placeholders, the
/// result of merge patches) are left to the parser.
nlohmann::ordered_json project_json_schema();

}  // namespace ktrain::project
