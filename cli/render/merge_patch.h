#pragma once
// RFC 7386 JSON merge patch, the rule of the project file's `patches`.

#include <nlohmann/json.hpp>

namespace ktrain::render {

/// Applies `patch` to `target` as RFC 7386 says: an object patch merges key by key
/// (a null value deletes the key), anything else replaces the target. Keys that
/// already exist keep their place; new keys are appended in the patch's order.
void apply_merge_patch(nlohmann::ordered_json& target, const nlohmann::ordered_json& patch);

}  // namespace ktrain::render
