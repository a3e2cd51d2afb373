#pragma once
// Image layers made from folders on this machine: walked in a fixed order, filtered by
// ignore rules, written as a deterministic tar, compressed and hashed in one pass into
// a file. A cache keyed by the files' metadata lets an unchanged folder skip the work.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oci/compress.h"
#include "oci/ignore.h"
#include "oci/tar.h"

namespace ktrain::oci {

/// A compressed layer blob on disk, with what a manifest and config need.
struct LayerBlob {
  std::string media_type;      ///< application/vnd.oci.image.layer.v1.tar+gzip (or +zstd)
  std::string digest;          ///< of the compressed bytes
  std::uint64_t size = 0;      ///< of the compressed bytes
  std::string diff_id;         ///< digest of the uncompressed tar
  std::string path;            ///< the file holding the compressed bytes
  std::uint64_t tar_size = 0;  ///< uncompressed size
  bool from_cache = false;     ///< reused from the layer cache
};

/// One file-system entry that goes into a layer.
struct ContextEntry {
  enum class Type { kDirectory, kFile, kSymlink };
  std::string rel;  ///< path relative to the folder ('/' separated)
  std::string abs;  ///< path on this machine
  Type type = Type::kFile;
  std::uint32_t mode = 0;  ///< permission bits
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  std::string link;  ///< symlink target
};

/// What to put in a layer: the files of `root` (filtered by `ignore`), under `prefix`
/// in the image ("workspace" puts root/a.py at /workspace/a.py).
struct LayerSource {
  std::string root;
  std::string prefix;
  IgnoreRules ignore;
  /// Directories created above the prefix, with mode 0755 ("opt", "opt/ktrain").
  /// Computed from `prefix` when empty.
  std::uint32_t prefix_mode = 0755;
};

/// Walks `src` in a fixed order (names sorted byte-wise, depth first) and calls `visit`
/// for each entry that is not ignored. Sockets, devices and FIFOs are skipped and
/// reported through `skipped`. Throws Error when the root cannot be read.
void walk_context(const LayerSource& src, const std::function<void(const ContextEntry&)>& visit,
                  const std::function<void(const std::string&)>& skipped = nullptr);

/// Options of make_layer.
struct LayerOptions {
  Compression compression = Compression::kGzip;
  std::int64_t mtime = 0;  ///< every entry's modification time (SOURCE_DATE_EPOCH or 0)
  std::string cache_dir;   ///< "" = no cache; else blobs and the index live here (0700, 0600)
  std::string temp_dir;    ///< where blob files go without a cache
  unsigned threads = 0;    ///< compression threads, 0 = all cores (up to 8)
  /// Called as uncompressed bytes go by (total so far).
  std::function<void(std::uint64_t)> progress;
  /// When set, also handed the compressed bytes as they are made (in order), so that
  /// they can be uploaded while the layer is built. Not called for a cached layer.
  std::function<void(std::string_view)> tee;
  /// Called for each entry skipped (special files).
  std::function<void(const std::string&)> skipped;
};

/// Adds `e` to `tar` as `name` (a folder, a link, or a file read from e.abs).
void add_entry(TarWriter& tar, const std::string& name, const ContextEntry& e);

/// A layer whose tar holds what `add` writes, compressed as `opts` say, in a file of
/// opts.temp_dir (not cached: such layers are small). opts.progress and opts.tee apply.
LayerBlob make_layer_of(const LayerOptions& opts, const std::function<void(TarWriter&)>& add);

/// Builds (or finds in the cache) the layer of `src`. Throws Error when the folder
/// contains no file once the ignore rules are applied (`what` names it in the message).
LayerBlob make_layer(const LayerSource& src, const LayerOptions& opts, const std::string& what);

/// The digest of the layer that the cache in `cache_dir` holds for `src`, when that
/// entry was made from the folder as it is now (every entry's metadata unchanged),
/// even if its blob is gone; nullopt otherwise. Tells whether a rebuild will most
/// likely make a layer the registry has seen already.
std::optional<std::string> indexed_digest(const LayerSource& src, const LayerOptions& opts,
                                          const std::string& cache_dir);

/// A stable fingerprint of everything make_layer reads: each entry's path, type, mode,
/// size, modification time, inode and link target, plus the layer settings.
std::string fingerprint(const LayerSource& src, const LayerOptions& opts, std::uint64_t* files);

/// Makes `dir` (and its missing parents) a folder of mode 0700, as every folder of the
/// layer cache is; narrows an existing one to 0700. Throws Error when it cannot, or
/// when `dir` belongs to another user.
void make_private_dir(const std::string& dir);

/// The OCI media type of a layer compressed with `c`.
std::string layer_media_type(Compression c);

}  // namespace ktrain::oci
