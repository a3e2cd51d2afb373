#include "runtime/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>

#include <string_view>

#include "runtime/read_file.h"

namespace ktrain::launch {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_candidate(const std::string& name) {
  if (name.empty() || name[0] == '.' || name == "latest") return false;
  for (std::string_view s : {".tmp", ".partial", ".incomplete"}) {
    if (ends_with(name, s)) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::optional<Checkpoint> latest_checkpoint(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  struct stat st {};
  // A `latest` file that names an entry of the folder.
  // (Only a regular file: a FIFO named `latest` would hold the launcher, and a status
  // that asks it, until something wrote to it.)
  if (const auto text = read_regular_file(base + "/latest", 1024)) {
    const std::string line = text->substr(0, text->find('\n'));
    const std::string name = trim(line);
    if (!name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
        ::stat((base + "/" + name).c_str(), &st) == 0) {
      return Checkpoint{base + "/" + name, static_cast<std::int64_t>(st.st_mtime)};
    }
  }
  DIR* d = ::opendir(base.c_str());
  if (!d) return std::nullopt;
  std::optional<Checkpoint> best;
  std::string best_name;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!is_candidate(name)) continue;
    if (::stat((base + "/" + name).c_str(), &st) != 0) continue;
    const auto t = static_cast<std::int64_t>(st.st_mtime);
    if (!best || t > best->mtime_unix || (t == best->mtime_unix && name > best_name)) {
      best = Checkpoint{base + "/" + name, t};
      best_name = name;
    }
  }
  ::closedir(d);
  return best;
}

}  // namespace ktrain::launch
