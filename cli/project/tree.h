#pragma once
// The project file as a small tree of values that remember where they came from
// (line:column in the file, or the --set that made them). yaml-cpp's nodes are turned
// into this tree so that --set overrides can be applied before validation.

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ktrain::project {

/// Where a value came from: a 1-based line and column of the file, or a --set flag.
struct Origin {
  int line = 0;
  int column = 0;
  std::string set;  ///< "--set train.nodes=abc" for values made by --set
};

/// A YAML value: null, scalar (text as written), list or map (keys in file order).
struct Value {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  std::string text;     ///< scalar text as written
  bool quoted = false;  ///< the scalar was quoted ('x' or "x"): always a string
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> entries;
  std::vector<Origin> key_origins;  ///< where each map key is, parallel to entries
  Origin origin;

  Value() = default;
  Value(const Value&) = default;
  Value(Value&&) = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) = default;
  /// Defined in tree.cc: an inline one makes clang (with libstdc++) check that
  /// std::pair<std::string, Value> can be destroyed while that pair is incomplete.
  ~Value();

  /// The entry named `key`, or nullptr.
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
};

/// A problem found while building the tree (syntax, duplicate keys, bad --set).
struct TreeProblem {
  Origin origin;
  std::string path;
  std::string message;
};

/// Parses YAML `text` into a tree; syntax errors, several documents, duplicate keys and
/// non-scalar keys become problems. Returns false when the text is not usable at all.
bool parse_tree(const std::string& text, Value& root, std::vector<TreeProblem>& problems);

/// Applies one `--set key.path=value` to `root`. Key paths: dot-separated keys, `[N]`
/// list indices, `[key.with.dots]` bracketed keys; the rest of the path after a map
/// listed in `free_form_maps` (e.g. "train.env") is one key, dots included.
/// The value is a YAML scalar (or flow list/map). Problems are appended.
void apply_set(Value& root, const std::string& set, const std::vector<std::string>& free_form_maps,
               std::vector<TreeProblem>& problems);

/// Writes `key` as a path element after `parent`: parent.key, or parent[key] when
/// `key` holds characters that would make the path ambiguous.
std::string join_path(const std::string& parent, const std::string& key);

/// Describes `v` for "found ...": "\"abc\"", "a list", "a map", "nothing".
std::string describe(const Value& v);

}  // namespace ktrain::project
