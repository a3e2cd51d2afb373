#include "render/merge_patch.h"

namespace ktrain::render {

void apply_merge_patch(nlohmann::ordered_json& target, const nlohmann::ordered_json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = nlohmann::ordered_json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_null()) {
      target.erase(it.key());
    } else {
      apply_merge_patch(target[it.key()], it.value());
    }
  }
}

}  // namespace ktrain::render
