#include "oci/layer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "oci/digest.h"
#include "oci/tar.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

namespace {

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a + "/" + b;
}

/// A file or folder of a context that cannot be read: bad input (exit 2), found before
/// anything is sent.
Error unreadable(const std::string& what, const std::string& path, int err) {
  return Error("cannot read " + what + "'" + path + "': " + std::strerror(err) +
                   " (make it readable, or leave it out with .ktrainignore or image.build.ignore)",
               exit_code::kUsage);
}

void walk_dir(const LayerSource& src, const std::string& abs, const std::string& rel,
              const std::function<void(const ContextEntry&)>& visit,
              const std::function<void(const std::string&)>& skipped) {
  DIR* d = ::opendir(abs.c_str());
  if (!d) throw unreadable("folder ", abs, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string child_rel = join(rel, n);
    const std::string child_abs = abs + "/" + n;
    const bool ignored = src.ignore.ignored(child_rel);
    struct stat st {};
    if (::lstat(child_abs.c_str(), &st) != 0) throw unreadable("", child_abs, errno);
    ContextEntry e;
    e.rel = child_rel;
    e.abs = child_abs;
    e.mode = st.st_mode & 07777;
    e.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    e.inode = st.st_ino;
    if (S_ISDIR(st.st_mode)) {
      // An excluded folder is still walked when a `!` pattern may take something back.
      if (ignored && !src.ignore.has_exceptions()) continue;
      e.type = ContextEntry::Type::kDirectory;
      if (!ignored) visit(e);
      walk_dir(src, child_abs, child_rel, visit, skipped);
      continue;
    }
    if (ignored) continue;
    if (S_ISREG(st.st_mode)) {
      e.type = ContextEntry::Type::kFile;
      e.size = static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISLNK(st.st_mode)) {
      e.type = ContextEntry::Type::kSymlink;
      std::vector<char> buf(static_cast<size_t>(st.st_size) + 1 + 4096);
      ssize_t len = ::readlink(child_abs.c_str(), buf.data(), buf.size());
      if (len < 0) throw Error("cannot read link '" + child_abs + "': " + std::strerror(errno));
      e.link.assign(buf.data(), static_cast<size_t>(len));
    } else {
      if (skipped) skipped(child_rel);
      continue;
    }
    visit(e);
  }
}

/// The prefix's own folders: "opt/ktrain/bin" -> opt, opt/ktrain, opt/ktrain/bin.
std::vector<std::string> prefix_dirs(const std::string& prefix) {
  std::vector<std::string> out;
  std::string cur;
  std::stringstream in(prefix);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (part.empty()) continue;
    cur = join(cur, part);
    out.push_back(cur);
  }
  return out;
}

std::string clean_prefix(const std::string& p) {
  std::string out;
  for (const auto& d : prefix_dirs(p)) out = d;
  return out;
}

/// Writes a file's bytes while hashing them. The file is the user's alone (0600), like
/// everything in the cache.
class HashingFile {
 public:
  explicit HashingFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) throw Error("cannot create '" + path + "': " + std::strerror(errno));
  }
  ~HashingFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(std::string_view d) {
    hash_.update(d);
    size_ += d.size();
    while (!d.empty()) {
      ssize_t n = ::write(fd_, d.data(), d.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
      }
      d.remove_prefix(static_cast<size_t>(n));
    }
  }
  std::string close_and_digest() {
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
    }
    fd_ = -1;
    return hash_.finish();
  }
  std::uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  Sha256 hash_;
  std::uint64_t size_ = 0;
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Writes `text` to `path` through a new file of mode 0600 renamed over it.
void write_private_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  {
    HashingFile f(tmp);
    f.write(text);
    f.close_and_digest();
  }
  fs::rename(tmp, path);
}

}  // namespace

void make_private_dir(const std::string& dir) {
  std::string cur;
  for (std::size_t i = 0; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    cur = dir.substr(0, i);
    if (cur.empty() || cur == "/") continue;
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error("cannot create the layer cache folder '" + cur + "': " + std::strerror(errno));
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("the layer cache '" + dir + "' is not a folder");
  }
  if (st.st_uid != ::geteuid()) {
    throw Error("the layer cache '" + dir +
                "' belongs to another user; set KTRAIN_CACHE_DIR to a folder of yours");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    throw Error("cannot make the layer cache '" + dir + "' private: " + std::strerror(errno));
  }
}

std::string layer_media_type(Compression c) {
  return c == Compression::kZstd ? "application/vnd.oci.image.layer.v1.tar+zstd"
                                 : "application/vnd.oci.image.layer.v1.tar+gzip";
}

void walk_context(const LayerSource& src, const std::function<void(const ContextEntry&)>& visit,
                  const std::function<void(const std::string&)>& skipped) {
  struct stat st {};
  if (::stat(src.root.c_str(), &st) != 0) {
    throw Error("cannot read folder '" + src.root + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw Error("'" + src.root + "' is not a folder");
  walk_dir(src, src.root, "", visit, skipped);
}

std::string fingerprint(const LayerSource& src, const LayerOptions& opts, std::uint64_t* files) {
  Sha256 h;
  // v2: setuid and setgid bits are no longer put in layers.
  h.update("ktrain-layer-v2\n");
  h.update(clean_prefix(src.prefix) + "\n" + compression_name(opts.compression) + "\n" +
           std::to_string(opts.mtime) + "\n");
  for (const auto& p : src.ignore.patterns()) h.update("ignore " + p + "\n");
  std::uint64_t n = 0;
  walk_context(src, [&](const ContextEntry& e) {
    if (e.type == ContextEntry::Type::kFile) ++n;
    std::string line = e.rel;
    line += '\0';
    line += std::to_string(static_cast<int>(e.type)) + " " + std::to_string(e.mode) + " " +
            std::to_string(e.size) + " " + std::to_string(e.mtime_ns) + " " +
            std::to_string(e.inode) + " " + e.link + "\n";
    h.update(line);
  });
  if (files) *files = n;
  return h.finish();
}

namespace {

/// The cache index entry of `src` (one per folder, prefix and compression).
std::string index_path_of(const LayerSource& src, const LayerOptions& opts,
                          const std::string& cache_dir) {
  const std::string key =
      digest_hex(sha256_digest(fs::absolute(src.root).string() + "\n" + clean_prefix(src.prefix) +
                               "\n" + compression_name(opts.compression)),
                 "the layer cache index");
  return cache_dir + "/index/" + key + ".json";
}

}  // namespace

std::optional<std::string> indexed_digest(const LayerSource& src, const LayerOptions& opts,
                                          const std::string& cache_dir) {
  std::error_code ec;
  const std::string index_path = index_path_of(src, opts, cache_dir);
  if (!fs::exists(index_path, ec)) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(read_text(index_path));
    if (j.at("fingerprint") != fingerprint(src, opts, nullptr)) return std::nullopt;
    return j.at("digest").get<std::string>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void add_entry(TarWriter& tar, const std::string& name, const ContextEntry& e) {
  switch (e.type) {
    case ContextEntry::Type::kDirectory:
      tar.add_directory(name, e.mode);
      break;
    case ContextEntry::Type::kSymlink:
      tar.add_symlink(name, e.link);
      break;
    case ContextEntry::Type::kFile: {
      int fd = ::open(e.abs.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw unreadable("", e.abs, errno);
      try {
        tar.add_file_from_fd(name, e.mode, e.size, fd);
      } catch (...) {
        ::close(fd);
        throw;
      }
      ::close(fd);
      break;
    }
  }
}

namespace {

/// Writes the layer whose tar holds what `add` writes into the file `tmp` (compressed
/// and hashed in one pass); the blob without its final path.
LayerBlob write_layer(const LayerOptions& opts, const std::string& tmp,
                      const std::function<void(TarWriter&)>& add) {
  LayerBlob blob;
  blob.media_type = layer_media_type(opts.compression);
  HashingFile out(tmp);
  Sha256 tar_hash;
  std::uint64_t tar_size = 0;
  auto compressor = make_compressor(
      opts.compression,
      [&](std::string_view d) {
        out.write(d);
        if (opts.tee) opts.tee(d);
      },
      opts.threads);
  TarWriter tar(
      [&](std::string_view d) {
        tar_hash.update(d);
        tar_size += d.size();
        compressor->write(d);
        if (opts.progress) opts.progress(tar_size);
      },
      opts.mtime);
  add(tar);
  tar.finish();
  compressor->finish();
  blob.digest = out.close_and_digest();
  blob.size = out.size();
  blob.diff_id = tar_hash.finish();
  blob.tar_size = tar_size;
  return blob;
}

}  // namespace

LayerBlob make_layer_of(const LayerOptions& opts, const std::function<void(TarWriter&)>& add) {
  static std::atomic<unsigned> serial{0};
  const std::string tmp =
      opts.temp_dir + "/layer-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  LayerBlob blob = write_layer(opts, tmp, add);
  blob.path = opts.temp_dir + "/" + digest_hex(blob.digest, "");
  fs::rename(tmp, blob.path);
  return blob;
}

LayerBlob make_layer(const LayerSource& src, const LayerOptions& opts, const std::string& what) {
  const std::string prefix = clean_prefix(src.prefix);
  std::string index_path;
  std::string fp;
  std::uint64_t files = 0;
  if (!opts.cache_dir.empty()) {
    fp = fingerprint(src, opts, &files);
    for (const char* sub : {"", "/index", "/blobs", "/blobs/sha256"}) {
      make_private_dir(opts.cache_dir + sub);
    }
    index_path = index_path_of(src, opts, opts.cache_dir);
    std::error_code ec;
    if (fs::exists(index_path, ec)) {
      try {
        auto j = nlohmann::json::parse(read_text(index_path));
        LayerBlob b;
        b.media_type = j.at("mediaType");
        b.digest = j.at("digest");
        b.size = j.at("size");
        b.diff_id = j.at("diffID");
        b.tar_size = j.at("tarSize");
        b.path = opts.cache_dir + "/blobs/sha256/" + digest_hex(b.digest, index_path);
        b.from_cache = true;
        if (j.at("fingerprint") == fp && fs::file_size(b.path, ec) == b.size && !ec) return b;
      } catch (const std::exception&) {
        // A damaged index entry is rebuilt below.
      }
    }
  } else {
    walk_context(src, [&](const ContextEntry& e) {
      if (e.type == ContextEntry::Type::kFile) ++files;
    });
  }
  if (files == 0) {
    throw Error(what + ": no file to put in the image: '" + src.root +
                    "' is empty once the ignore rules are applied (check .ktrainignore, "
                    ".dockerignore and image.build.ignore)",
                exit_code::kUsage);
  }

  const std::string dir = opts.cache_dir.empty() ? opts.temp_dir : opts.cache_dir + "/blobs";
  const std::string tmp = dir + "/tmp-" + std::to_string(::getpid()) + "-" +
                          digest_hex(sha256_digest(src.root + prefix), "").substr(0, 12);
  LayerBlob blob = write_layer(opts, tmp, [&](TarWriter& tar) {
    for (const auto& d : prefix_dirs(prefix)) tar.add_directory(d, src.prefix_mode);
    walk_context(
        src, [&](const ContextEntry& e) { add_entry(tar, join(prefix, e.rel), e); }, opts.skipped);
  });
  if (opts.cache_dir.empty()) {
    blob.path = opts.temp_dir + "/" + digest_hex(blob.digest, "");
    fs::rename(tmp, blob.path);
    return blob;
  }
  blob.path = opts.cache_dir + "/blobs/sha256/" + digest_hex(blob.digest, "");
  // Drop the blob that this folder's previous entry pointed to, so the cache holds
  // one layer per folder.
  std::error_code ec;
  try {
    if (fs::exists(index_path, ec)) {
      auto old = nlohmann::json::parse(read_text(index_path));
      std::string old_digest = old.at("digest");
      if (old_digest != blob.digest)
        fs::remove(opts.cache_dir + "/blobs/sha256/" + digest_hex(old_digest, index_path), ec);
    }
  } catch (const std::exception&) {
  }
  fs::rename(tmp, blob.path);
  nlohmann::json j = {{"fingerprint", fp},      {"mediaType", blob.media_type},
                      {"digest", blob.digest},  {"size", blob.size},
                      {"diffID", blob.diff_id}, {"tarSize", blob.tar_size}};
  write_private_text(index_path, j.dump());
  return blob;
}

}  // namespace ktrain::oci
