#pragma once
// Reading fields of API objects (as nlohmann::json) that may be missing or of another
// type: a default instead of an exception. Shared by the files of kube/.

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ktrain::kube::detail {

/// The value at `keys` under `j`, or a null value when a key is missing.
const nlohmann::json& at_path(const nlohmann::json& j, std::initializer_list<const char*> keys);
/// The string at `keys`, or "".
std::string str(const nlohmann::json& j, std::initializer_list<const char*> keys);
/// `v` as an int (a number or a string of digits), else `fallback`.
int integer(const nlohmann::json& v, int fallback = 0);
/// The RFC 3339 time at `keys`, or nullopt.
std::optional<std::chrono::system_clock::time_point> time_at(const nlohmann::json& j,
                                                             std::initializer_list<const char*> k);
/// Whether `obj` has status condition `type` True (copied to `found` when given).
bool condition_true(const nlohmann::json& obj, const char* type, nlohmann::json* found = nullptr);
/// The GPUs a container asks for in its limits (NVIDIA, MIG slices, AMD).
int gpus_of(const nlohmann::json& container);

}  // namespace ktrain::kube::detail
