#pragma once
// Reading fields of JSON that came from outside (registries, API servers, plugins,
// config files). nlohmann's value("key", default) throws type_error when the field is
// there with another type (a number where a string was expected); these read such a
// field as absent instead.

#include <string>

#include <nlohmann/json.hpp>

namespace ktrain {

/// The string at `key` of `obj`, or `fallback` when `obj` is not an object, has no
/// `key`, or holds something other than a string there.
template <typename Json>
std::string string_field(const Json& obj, const std::string& key,
                         const std::string& fallback = "") {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return fallback;
  return it->template get<std::string>();
}

}  // namespace ktrain
