// --grep, --exclude and --save of `ktrain logs` (cmd/log_filter.h).
#include "cmd/log_filter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "base/error.h"

namespace ktrain::cmd {

namespace fs = std::filesystem;

RankedText split_rank_prefix(std::string_view line) {
  if (line.substr(0, 6) != "[rank ") return {-1, line};
  const auto close = line.find(']');
  if (close == std::string_view::npos || close == 6) return {-1, line};
  int rank = 0;
  for (std::size_t i = 6; i < close; ++i) {
    if (line[i] < '0' || line[i] > '9' || rank > 100'000'000) return {-1, line};
    rank = rank * 10 + (line[i] - '0');
  }
  std::string_view text = line.substr(close + 1);
  if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return {rank, text};
}

namespace {

std::vector<std::regex> compile(const std::vector<std::string>& exprs, const std::string& flag) {
  std::vector<std::regex> out;
  for (const auto& e : exprs) {
    try {
      out.emplace_back(e, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& err) {
      throw UsageError(flag + " '" + e + "': not a regular expression (" + err.what() + ")");
    }
  }
  return out;
}

bool any_match(const std::vector<std::regex>& res, std::string_view text) {
  for (const auto& re : res) {
    if (std::regex_search(text.begin(), text.end(), re)) return true;
  }
  return false;
}

}  // namespace

LogFilter::LogFilter(const std::vector<std::string>& grep, const std::vector<std::string>& exclude)
    : grep_(compile(grep, "--grep")), exclude_(compile(exclude, "--exclude")) {}

bool LogFilter::keep(std::string_view line) const {
  const std::string_view text = split_rank_prefix(line).text;
  if (!grep_.empty() && !any_match(grep_, text)) return false;
  return !any_match(exclude_, text);
}

std::string LogFilter::highlighted(const std::string& line) const {
  if (grep_.empty()) return line;
  const std::string_view text = split_rank_prefix(line).text;
  const std::size_t start = line.size() - text.size();
  // The spans that some --grep matches, merged.
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const auto& re : grep_) {
    for (auto it = std::cregex_iterator(line.data() + start, line.data() + line.size(), re);
         it != std::cregex_iterator(); ++it) {
      if (it->length() == 0) continue;
      const std::size_t b = start + static_cast<std::size_t>(it->position());
      spans.emplace_back(b, b + static_cast<std::size_t>(it->length()));
    }
  }
  if (spans.empty()) return line;
  std::sort(spans.begin(), spans.end());
  std::string out = line.substr(0, spans.front().first);
  std::size_t at = spans.front().first;
  for (std::size_t i = 0; i < spans.size();) {
    std::size_t b = std::max(spans[i].first, at), e = spans[i].second;
    for (++i; i < spans.size() && spans[i].first <= e; ++i) e = std::max(e, spans[i].second);
    if (e <= b) continue;
    out.append(line, at, b - at);
    out += "\033[1;31m";
    out.append(line, b, e - b);
    out += "\033[0m";
    at = e;
  }
  out.append(line, at, std::string::npos);
  return out;
}

LogSaver::LogSaver(std::string dir, bool timestamps)
    : dir_(std::move(dir)), timestamps_(timestamps) {
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    if (!fs::is_directory(dir_, ec)) throw UsageError("--save " + dir_ + ": not a folder");
    if (!fs::is_empty(dir_, ec)) {
      throw UsageError("--save " + dir_ +
                       ": the folder holds files already; name a new or empty one (nothing is "
                       "overwritten)");
    }
  }
  // Made with the first file (or at the end): a run that is not found leaves nothing.
  // Whether it can be made is known now: its nearest existing parent must be writable.
  fs::path parent = fs::absolute(dir_, ec);
  while (!parent.empty() && !fs::exists(parent, ec)) parent = parent.parent_path();
  if (!fs::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0) {
    throw UsageError("--save " + dir_ + ": cannot make the folder in '" + parent.string() +
                     "' (not a writable folder)");
  }
}

void LogSaver::make_dir() {
  if (made_) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error("--save " + dir_ + ": cannot make the folder: " + ec.message());
  made_ = true;
}

std::ofstream& LogSaver::file(const std::string& name) {
  auto it = files_.find(name);
  if (it != files_.end()) return *it->second;
  make_dir();
  const std::string path = dir_ + "/" + name;
  auto f = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc);
  if (!*f) throw Error("--save: cannot write '" + path + "'");
  return *files_.emplace(name, std::move(f)).first->second;
}

void LogSaver::write(const backend::LogLine& line) {
  const RankedText r = split_rank_prefix(line.text);
  std::ofstream& f = line.notice   ? file("ktrain.log")
                     : r.rank >= 0 ? file("rank-" + std::to_string(r.rank) + ".log")
                                   : file("node-" + std::to_string(line.rank) + ".log");
  if (timestamps_ && !line.timestamp.empty()) f << line.timestamp << ' ';
  if (line.notice) {
    f << line.text << '\n';
  } else {
    f << (r.rank >= 0 ? r.text : std::string_view(line.text)) << '\n';
    ++lines_;
  }
  if (!f) throw Error("--save: cannot write under '" + dir_ + "' (is the disk full?)");
}

std::string LogSaver::finish() {
  make_dir();
  std::size_t n = 0;
  for (auto& [name, f] : files_) {
    f->close();
    if (f->fail()) throw Error("--save: cannot write '" + dir_ + "/" + name + "'");
    ++n;
  }
  return std::to_string(lines_) + (lines_ == 1 ? " line" : " lines") + " in " + std::to_string(n) +
         (n == 1 ? " file" : " files") + " under " + dir_;
}

}  // namespace ktrain::cmd
