#pragma once
// What a workspace holds, as `build --sync` compares it: a tree of each entry's type,
// mode, size, modification time, inode and link target (no file is read), kept in the
// layer cache for every image built or synced here, so that the next sync puts only
// what changed since (and whiteouts for what went) in one thin layer.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oci/layer.h"

namespace ktrain::oci {

/// A workspace's entries by path relative to it ('/' separated). Entries loaded from a
/// record have no `abs`.
using Tree = std::map<std::string, ContextEntry>;

/// The tree of `src` as walk_context sees it (ignore rules applied).
Tree tree_of(const LayerSource& src, const std::function<void(const std::string&)>& skipped);

/// Takes out of `t` the entries at `paths` and below them; returns how many went.
std::size_t drop_paths(Tree& t, const std::vector<std::string>& paths);

/// What changed from `before` to `now`.
struct TreeDelta {
  /// New or changed entries of `now`, in path order (a folder before what it holds): a
  /// file or link whose type, mode, size, modification time, inode or target changed; a
  /// folder that is new or whose mode changed.
  std::vector<std::string> changed;
  /// Entries of `before` gone from `now`, without those under a removed folder or under
  /// a path that is no longer a folder (the one whiteout or replacement covers them).
  std::vector<std::string> removed;
  std::uint64_t bytes = 0;  ///< the sizes of the changed files

  bool empty() const { return changed.empty() && removed.empty(); }
};
TreeDelta diff_trees(const Tree& before, const Tree& now);

/// `t` as JSON text, and back. tree_from_json throws Error naming `what` on bad text.
std::string tree_to_json(const Tree& t);
Tree tree_from_json(const std::string& text, const std::string& what);

/// Keeps `tree` as what the image `digest` holds, in `cache_dir`/trees (the newest 64
/// are kept). A failure is left unsaid: the next sync then sends the whole workspace.
void remember_tree(const std::string& cache_dir, const std::string& digest, const Tree& tree);

/// The tree remembered for `digest`; nullopt when none is (or it cannot be read).
std::optional<Tree> recalled_tree(const std::string& cache_dir, const std::string& digest);

/// The whiteout entry that removes `rel` in a layer: "dir/.wh.name".
std::string whiteout_of(const std::string& rel);

}  // namespace ktrain::oci
