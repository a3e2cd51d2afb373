#pragma once
// Which files of a build context stay out of the image: .ktrainignore / .dockerignore
// syntax (the rules of Docker's patternmatcher).

#include <string>
#include <vector>

namespace ktrain::oci {

/// An ordered list of ignore patterns. Syntax, as in .dockerignore:
/// - one pattern per line; blank lines and lines starting with '#' are skipped;
/// - paths are relative to the context, '/' separated; a leading '/' is dropped;
/// - `*` matches within one path segment, `?` one character, `[a-z]` a class,
///   `**` any number of segments (also none), `\` escapes;
/// - a pattern that matches a directory excludes everything below it;
/// - `!pattern` re-includes what an earlier pattern excluded; the last matching
///   pattern decides.
class IgnoreRules {
 public:
  /// Adds one pattern (a line of an ignore file); blank lines and comments are skipped.
  void add(const std::string& line);
  /// Adds every line of an ignore file's `text`.
  void add_file_text(const std::string& text);
  /// Whether `path` (relative, '/' separated, no leading "./") is excluded.
  bool ignored(const std::string& path) const;
  /// Whether some `!` pattern could re-include something below an excluded directory
  /// (then the directory must still be walked).
  bool has_exceptions() const { return has_exceptions_; }
  /// The patterns, as added (after cleaning).
  std::vector<std::string> patterns() const;

 private:
  struct Rule {
    std::vector<std::string> segments;
    bool negate = false;
    std::string text;
  };
  std::vector<Rule> rules_;
  bool has_exceptions_ = false;
};

/// Whether `path` matches `pattern` (both '/' separated; `**` spans segments).
bool glob_match(const std::string& pattern, const std::string& path);

}  // namespace ktrain::oci
