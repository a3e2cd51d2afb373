#pragma once
// Kubernetes label selectors, as `kubectl get -l` takes them: comma-separated
// requirements `key`, `!key`, `key=value` (or ==), `key!=value`, `key in (a,b)`,
// `key notin (a,b)`, `key>N`, `key<N`. Parsed here to say what is wrong before a
// request is sent, and matched here against the labels of local runs.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktrain {

/// One requirement of a selector.
struct LabelRequirement {
  enum class Op { kExists, kNotExists, kEquals, kNotEquals, kIn, kNotIn, kGreater, kLess };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  ///< one for = != > <, several for in/notin
};

/// A parsed selector: every requirement must hold.
struct LabelSelector {
  std::vector<LabelRequirement> requirements;

  bool empty() const { return requirements.empty(); }
  /// Whether `labels` satisfy every requirement (as the API server decides).
  bool matches(const std::map<std::string, std::string>& labels) const;
  /// The canonical text, for the API server's labelSelector parameter.
  std::string to_string() const;
};

/// Parses `text`; nullopt with `*problem` set ("at 7: expected a value after `in`")
/// when it is not a valid selector. An empty or blank text is the empty selector.
std::optional<LabelSelector> parse_label_selector(std::string_view text, std::string* problem);

}  // namespace ktrain
