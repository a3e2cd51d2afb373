#pragma once
// ktrain.yaml -> Project: parsing and validation that collect every problem of a file
// (with file:line:column, key path, what was expected and what was found) before failing.

#include <string>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "project/project.h"

namespace ktrain::project {

/// One problem in a project file: where, which key, what was expected, what was found.
/// `line`/`column` are 1-based; 0 when the problem has no position (then `file` holds
/// the place, e.g. "--set train.nodes=abc", or the file name for file-level problems).
struct Problem {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  ///< key path such as train.volumes[1].mount; "" for the whole file
  std::string message;

  /// "ktrain.yaml:12:5: train.gpus: expected a whole number >= 0, found \"-1\"";
  /// without a position: "--set train.nodes=abc: train.nodes: ..." or "ktrain.yaml: ...".
  std::string format() const;
};

/// All problems of a file; exit status 2. what() is every problem, one per line.
class ProjectError : public UsageError {
 public:
  explicit ProjectError(std::vector<Problem> problems);
  /// The problems, in file order (--set problems last).
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::vector<Problem> problems_;
};

/// Parses and validates project text. `file` is used in messages; `directory` resolves
/// relative paths (image.build.context). `sets` are --set key.path=value overrides.
/// Throws ProjectError listing every problem.
Project parse_project(const std::string& text, const std::string& file,
                      const std::string& directory, const std::vector<std::string>& sets = {});

/// Reads `path` ("-" = env.in) through env.fs and parses it (file errors are also
/// ProjectError, exit status 2).
Project load_project(Env& env, const std::string& path, const std::vector<std::string>& sets = {});

}  // namespace ktrain::project
