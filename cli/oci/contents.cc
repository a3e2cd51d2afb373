// What goes into an image besides its base (oci/contents.h).
#include "oci/contents.h"

#include <filesystem>
#include <optional>

#include "base/error.h"
#include "net/log.h"
#include "oci/build_record.h"
#include "oci/credentials.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

namespace {

std::string find_launcher(const Env& env) {
  std::string path;
  if (auto l = env.var("KTRAIN_LAUNCH_PATH"); l && !l->empty()) {
    path = *l;
  } else {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    path = (self.parent_path() / "ktrain-launch").string();
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error("cannot find ktrain-launch at '" + path +
                    "': install it beside ktrain, or set KTRAIN_LAUNCH_PATH",
                exit_code::kUsage);
  }
  return path;
}

/// Runs git in `dir` and returns its output, or nullopt when git or the repository is
/// not there (or git fails).
std::optional<std::string> git_output(const Env& env, const std::string& dir,
                                      const std::vector<std::string>& args) {
  auto run = real_helper_runner(env);
  std::vector<std::string> argv = {"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  try {
    auto [status, out] = run(argv, "");
    if (status != 0) return std::nullopt;
    return out;
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// git_output without the trailing newline; "" when there is none.
std::string git(const Env& env, const std::string& dir, const std::vector<std::string>& args) {
  std::string out = git_output(env, dir, args).value_or("");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string strip_slashes(std::string s) {
  while (!s.empty() && s.front() == '/') s.erase(s.begin());
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

std::vector<std::string> launcher_files(const Env& env) {
  const std::string launcher = find_launcher(env);
  std::vector<std::string> files = {launcher};
  const std::string helper = (fs::path(launcher).parent_path() / "ktrain-gpucheck").string();
  std::error_code ec;
  if (fs::is_regular_file(helper, ec)) files.push_back(helper);
  return files;
}

LayerBlob make_launcher_layer(const std::vector<std::string>& files, const std::string& prefix,
                              const std::string& stage_root, LayerOptions lo, Progress& progress) {
  const std::string stage = stage_root + (prefix.empty() ? "/launcher-image" : "/launcher");
  make_private_dir(stage);
  std::error_code ec;
  // Only the files named: an old helper left in the stage would go into the layer.
  for (const auto& entry : fs::directory_iterator(stage, ec)) {
    const std::string name = entry.path().filename().string();
    bool wanted = false;
    for (const auto& f : files) wanted = wanted || fs::path(f).filename() == name;
    std::error_code rec;
    if (!wanted) fs::remove_all(entry.path(), rec);
  }
  for (const auto& file : files) {
    const std::string linked = stage + "/" + fs::path(file).filename().string();
    // A hard link keeps the inode and time, so the layer cache sees an unchanged file;
    // across file systems a copy with the original's time does the same.
    const bool same = fs::exists(linked, ec) &&
                      (fs::equivalent(linked, file, ec) ||
                       (fs::file_size(linked, ec) == fs::file_size(file, ec) &&
                        fs::last_write_time(linked, ec) == fs::last_write_time(file, ec)));
    if (same) continue;
    fs::remove(linked, ec);
    ec.clear();
    fs::create_hard_link(file, linked, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(file, linked, fs::copy_options::overwrite_existing, ec);
      if (!ec) fs::last_write_time(linked, fs::last_write_time(file, ec), ec);
    }
    if (ec) throw Error("cannot stage '" + file + "' in '" + stage + "': " + ec.message());
    fs::permissions(linked, fs::perms(0755), ec);
  }
  LayerSource src;
  src.root = stage;
  src.prefix = prefix;
  lo.progress = [&](std::uint64_t n) { progress.bytes("ktrain-launch layer", n); };
  LayerBlob layer = make_layer(src, lo, "the ktrain-launch layer");
  progress.step("layer ktrain-launch: " + human_bytes(static_cast<double>(layer.size)) + " " +
                layer.digest.substr(0, 19) + (layer.from_cache ? " (cached)" : ""));
  return layer;
}

Workspace workspace_of(const Env& env, const std::string& context, const project::ImageBuild& b) {
  Workspace w;
  w.source.root = context;
  w.source.prefix = strip_slashes(b.workdir);
  w.source.ignore.add(".git");
  w.source.ignore.add(kStateDir);  // what build records: not part of the image
  for (const char* name : {".ktrainignore", ".dockerignore"}) {
    const std::string p = context + "/" + name;
    if (env.fs->exists(p)) {
      w.source.ignore.add_file_text(env.fs->read_file(p));
      w.ignore_file = p;
      break;
    }
  }
  for (const auto& i : b.ignore) w.source.ignore.add(i);
  return w;
}

std::optional<std::vector<std::string>> git_ignored(const Env& env, const std::string& context) {
  // Outside a work tree, git fails: nullopt.
  const auto out =
      git_output(env, context,
                 {"ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"});
  if (!out) return std::nullopt;
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start < out->size()) {
    std::size_t end = out->find('\0', start);
    if (end == std::string::npos) end = out->size();
    std::string p = out->substr(start, end - start);
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (!p.empty()) paths.push_back(std::move(p));
    start = end + 1;
  }
  return paths;
}

std::vector<std::pair<std::string, std::string>> source_labels(const Env& env,
                                                               const std::string& context) {
  std::vector<std::pair<std::string, std::string>> labels;
  std::string source = git(env, context, {"config", "--get", "remote.origin.url"});
  std::string revision = git(env, context, {"rev-parse", "HEAD"});
  if (!source.empty())
    labels.emplace_back("org.opencontainers.image.source", net::redact_url(source));
  if (!revision.empty()) labels.emplace_back("org.opencontainers.image.revision", revision);
  return labels;
}

}  // namespace ktrain::oci
