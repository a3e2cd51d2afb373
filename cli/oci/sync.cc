// Workspace trees and their differences (oci/sync.h).
#include "oci/sync.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "oci/digest.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

namespace {

/// How many trees the cache keeps.
constexpr std::size_t kKeptTrees = 64;

std::string tree_path(const std::string& cache_dir, const std::string& digest) {
  return cache_dir + "/trees/" + digest_hex(digest, "a workspace tree") + ".json";
}

bool same(const ContextEntry& a, const ContextEntry& b) {
  if (a.type != b.type || a.mode != b.mode) return false;
  switch (a.type) {
    case ContextEntry::Type::kDirectory:
      return true;  // its time and size change with what it holds
    case ContextEntry::Type::kSymlink:
      return a.link == b.link;
    case ContextEntry::Type::kFile:
      return a.size == b.size && a.mtime_ns == b.mtime_ns && a.inode == b.inode;
  }
  return false;
}

/// The folders above `rel`, nearest first ("a/b/c" -> a/b, a).
std::vector<std::string> parents(const std::string& rel) {
  std::vector<std::string> out;
  for (auto slash = rel.rfind('/'); slash != std::string::npos && slash > 0;
       slash = rel.rfind('/', slash - 1)) {
    out.push_back(rel.substr(0, slash));
  }
  return out;
}

}  // namespace

Tree tree_of(const LayerSource& src, const std::function<void(const std::string&)>& skipped) {
  Tree t;
  walk_context(
      src, [&t](const ContextEntry& e) { t.emplace(e.rel, e); }, skipped);
  return t;
}

std::size_t drop_paths(Tree& t, const std::vector<std::string>& paths) {
  if (paths.empty()) return 0;
  const std::set<std::string> gone(paths.begin(), paths.end());
  std::size_t n = 0;
  for (auto it = t.begin(); it != t.end();) {
    bool drop = gone.count(it->first) > 0;
    for (const auto& p : parents(it->first)) {
      if (drop) break;
      drop = gone.count(p) > 0;
    }
    if (drop) {
      it = t.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

TreeDelta diff_trees(const Tree& before, const Tree& now) {
  TreeDelta d;
  for (const auto& [rel, e] : now) {
    auto it = before.find(rel);
    if (it != before.end() && same(it->second, e)) continue;
    d.changed.push_back(rel);
    if (e.type == ContextEntry::Type::kFile) d.bytes += e.size;
  }
  for (const auto& [rel, e] : before) {
    if (now.count(rel)) continue;
    bool covered = false;
    for (const auto& p : parents(rel)) {
      auto n = now.find(p);
      // A removed folder above it, or a path above it that is now a file or a link.
      if (n == now.end() ? before.count(p) > 0 : n->second.type != ContextEntry::Type::kDirectory) {
        covered = true;
        break;
      }
    }
    if (!covered) d.removed.push_back(rel);
  }
  return d;
}

std::string whiteout_of(const std::string& rel) {
  const auto slash = rel.rfind('/');
  if (slash == std::string::npos) return ".wh." + rel;
  return rel.substr(0, slash + 1) + ".wh." + rel.substr(slash + 1);
}

std::string tree_to_json(const Tree& t) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [rel, e] : t) {
    entries.push_back({rel, static_cast<int>(e.type), e.mode, e.size, e.mtime_ns, e.inode, e.link});
  }
  return nlohmann::json{{"version", 1}, {"entries", entries}}.dump();
}

Tree tree_from_json(const std::string& text, const std::string& what) {
  Tree t;
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("version") != 1) throw Error(what + ": an unknown version");
    for (const auto& a : j.at("entries")) {
      ContextEntry e;
      e.rel = a.at(0).get<std::string>();
      const int type = a.at(1).get<int>();
      if (type < 0 || type > 2) throw Error(what + ": a bad entry type");
      e.type = static_cast<ContextEntry::Type>(type);
      e.mode = a.at(2).get<std::uint32_t>();
      e.size = a.at(3).get<std::uint64_t>();
      e.mtime_ns = a.at(4).get<std::int64_t>();
      e.inode = a.at(5).get<std::uint64_t>();
      e.link = a.at(6).get<std::string>();
      t.emplace(e.rel, std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": " + e.what());
  }
  return t;
}

void remember_tree(const std::string& cache_dir, const std::string& digest, const Tree& tree) {
  if (cache_dir.empty()) return;
  try {
    make_private_dir(cache_dir + "/trees");
    const std::string path = tree_path(cache_dir, digest);
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << tree_to_json(tree);
      if (!f.flush()) return;
    }
    ::chmod(tmp.c_str(), 0600);
    fs::rename(tmp, path);
    // The newest trees only: the oldest go.
    std::vector<std::pair<fs::file_time_type, fs::path>> all;
    for (const auto& entry : fs::directory_iterator(cache_dir + "/trees")) {
      std::error_code ec;
      auto when = entry.last_write_time(ec);
      if (!ec) all.emplace_back(when, entry.path());
    }
    if (all.size() <= kKeptTrees) return;
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i + kKeptTrees < all.size(); ++i) {
      std::error_code ec;
      fs::remove(all[i].second, ec);
    }
  } catch (const std::exception&) {
    // Not kept: the next sync sends the whole workspace (and says so).
  }
}

std::optional<Tree> recalled_tree(const std::string& cache_dir, const std::string& digest) {
  if (cache_dir.empty()) return std::nullopt;
  try {
    std::ifstream f(tree_path(cache_dir, digest));
    if (!f) return std::nullopt;
    std::stringstream s;
    s << f.rdbuf();
    return tree_from_json(s.str(), "the workspace tree of " + digest);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace ktrain::oci
