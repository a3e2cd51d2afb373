// Reading fields of API objects that may be missing (kube/json_read.h).
#include "kube/json_read.h"

#include "base/timefmt.h"

namespace ktrain::kube::detail {

using nlohmann::json;

const json& at_path(const json& j, std::initializer_list<const char*> keys) {
  static const json null_value;
  const json* cur = &j;
  for (const char* k : keys) {
    if (!cur->is_object()) return null_value;
    auto it = cur->find(k);
    if (it == cur->end()) return null_value;
    cur = &*it;
  }
  return *cur;
}

std::string str(const json& j, std::initializer_list<const char*> keys) {
  const auto& v = at_path(j, keys);
  return v.is_string() ? v.get<std::string>() : "";
}

int integer(const json& v, int fallback) {
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_string()) {
    try {
      return std::stoi(v.get<std::string>());
    } catch (...) {
      return fallback;
    }
  }
  return fallback;
}

std::optional<std::chrono::system_clock::time_point> time_at(const json& j,
                                                             std::initializer_list<const char*> k) {
  auto s = str(j, k);
  if (s.empty()) return std::nullopt;
  return parse_rfc3339(s);
}

bool condition_true(const json& obj, const char* type, json* found) {
  const auto& conds = at_path(obj, {"status", "conditions"});
  if (!conds.is_array()) return false;
  for (const auto& c : conds) {
    if (c.value("type", "") == type && c.value("status", "") == "True") {
      if (found) *found = c;
      return true;
    }
  }
  return false;
}

int gpus_of(const json& container) {
  const auto& limits = at_path(container, {"resources", "limits"});
  if (!limits.is_object()) return 0;
  for (auto it = limits.begin(); it != limits.end(); ++it) {
    if (it.key() == "nvidia.com/gpu" || it.key().rfind("nvidia.com/mig-", 0) == 0 ||
        it.key() == "amd.com/gpu") {
      return integer(it.value());
    }
  }
  return 0;
}

}  // namespace ktrain::kube::detail
