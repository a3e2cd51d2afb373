#pragma once
// What `ktrain logs` keeps and where it goes: --grep/--exclude (regular expressions on
// each line's text, the matches highlighted on a terminal) and --save DIR (each rank's
// lines to a file of its own).

#include <cstddef>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "base/env.h"

namespace ktrain::cmd {

/// A line's worker rank and text: "[rank 3] loss 0.1" -> {3, "loss 0.1"}; a line without
/// the launcher's prefix -> {-1, the line}.
struct RankedText {
  int rank = -1;
  std::string_view text;
};
RankedText split_rank_prefix(std::string_view line);

/// --grep and --exclude: a line is kept when it matches one --grep (or none is given)
/// and no --exclude. ECMAScript regular expressions, searched anywhere in the line's
/// text (after the "[rank N]" prefix).
class LogFilter {
 public:
  /// Throws UsageError naming the flag and the expression that does not compile.
  LogFilter(const std::vector<std::string>& grep, const std::vector<std::string>& exclude);

  bool active() const { return !grep_.empty() || !exclude_.empty(); }
  bool keep(std::string_view line) const;
  /// `line` with each match of a --grep wrapped in bold red (for a terminal).
  std::string highlighted(const std::string& line) const;

 private:
  std::vector<std::regex> grep_, exclude_;
};

/// --save DIR: lines with a worker rank go to DIR/rank-R.log (the prefix dropped),
/// other lines to DIR/node-N.log; ktrain's notices to DIR/ktrain.log.
class LogSaver {
 public:
  /// Checks DIR; throws UsageError when it holds files already (nothing is overwritten),
  /// is not a folder, or cannot be made. DIR (and its parents) is made with the first file.
  LogSaver(std::string dir, bool timestamps);
  /// Writes one line; throws Error when a file cannot be written.
  void write(const backend::LogLine& line);
  /// Closes the files; returns "N lines in M files under DIR".
  std::string finish();

 private:
  std::ofstream& file(const std::string& name);
  void make_dir();

  std::string dir_;
  bool timestamps_;
  std::map<std::string, std::unique_ptr<std::ofstream>> files_;
  std::size_t lines_ = 0;
  bool made_ = false;
};

}  // namespace ktrain::cmd
