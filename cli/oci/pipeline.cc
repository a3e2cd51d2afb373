// The image pipeline (oci/pipeline.h).
#include "oci/pipeline.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "base/cuda.h"
#include "base/error.h"
#include "base/image_ref.h"
#include "base/progress.h"
#include "oci/contents.h"
#include "oci/digest.h"
#include "oci/image.h"
#include "oci/layer.h"
#include "oci/layout.h"
#include "oci/publish.h"
#include "oci/registry.h"
#include "oci/sync.h"

namespace ktrain::oci {

namespace fs = std::filesystem;

namespace {

/// The layer cache: $KTRAIN_CACHE_DIR, else under $XDG_CACHE_HOME or $HOME; "" (no
/// cache) when none is set, rather than a shared folder whose name others can guess.
std::string cache_dir(const Env& env) {
  if (auto d = env.var("KTRAIN_CACHE_DIR"); d && !d->empty()) return *d;
  if (auto d = env.var("XDG_CACHE_HOME"); d && !d->empty()) return *d + "/ktrain";
  if (auto d = env.var("HOME"); d && !d->empty()) return *d + "/.cache/ktrain";
  return "";
}

/// The label of a synced image: the digest of the full build under its sync layers.
constexpr char kSyncOntoLabel[] = "dev.ktrain.sync.onto";

/// A temporary folder removed when this goes away.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ktrain-build-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error("cannot create a temporary folder");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// SOURCE_DATE_EPOCH when set, else 0 (1970), so that rebuilds are reproducible.
std::int64_t source_date_epoch(const Env& env) {
  if (auto s = env.var("SOURCE_DATE_EPOCH"); s && !s->empty()) {
    try {
      return std::stoll(*s);
    } catch (const std::exception&) {
      throw UsageError("SOURCE_DATE_EPOCH=" + *s + ": expected seconds since 1970");
    }
  }
  return 0;
}

/// How layers are made: the compression asked for, file times of `epoch`, blobs in the
/// cache (or in `tmp` with --no-cache).
LayerOptions layer_options(const Env& env, const BuildSettings& opts, std::int64_t epoch,
                           const TempDir& tmp) {
  LayerOptions lo;
  lo.compression = opts.compression == "zstd" ? Compression::kZstd : Compression::kGzip;
  lo.mtime = epoch;
  lo.temp_dir = tmp.path;
  if (!opts.no_cache) lo.cache_dir = cache_dir(env);
  if (!opts.no_cache && lo.cache_dir.empty() && env.global.verbose > 0) {
    env.warn("no layer cache: neither KTRAIN_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
  }
  return lo;
}

/// "linux/arm64/v8" -> {linux, arm64, v8} (validated by the verb).
std::vector<std::string> split_platform(const std::string& platform) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= platform.size(); ++i) {
    if (i == platform.size() || platform[i] == '/') {
      parts.push_back(platform.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

/// The image `ref` names in its registry (for `platform`): manifest and config only.
Image fetch_image(RegistryClient& client, const ImageRef& ref, const std::string& platform,
                  std::string* digest) {
  ManifestBytes manifest = client.get_manifest(ref, platform);
  // Every digest in the manifest is checked before it is used (in a URL, a file name).
  Image img = with_context("pulling " + ref.str(), [&] {
    const Descriptor cfg = manifest_config(manifest.bytes);
    const std::string config = client.get_blob(Repo{ref.registry, ref.repository}, cfg.digest,
                                               static_cast<std::int64_t>(cfg.size));
    return image_from_manifest(manifest.bytes, config);
  });
  if (digest) *digest = manifest.digest;
  return img;
}

}  // namespace

BuildResult build_project_image(Env& env, const project::Project& proj,
                                const BuildSettings& settings) {
  if (!proj.image.build) {
    throw UsageError(proj.file +
                     ": image.build is not set; add image.build.base and "
                     "image.build.repository to build an image");
  }
  const project::ImageBuild& b = *proj.image.build;
  const std::string context = b.context.empty() ? proj.directory : b.context;
  if (!env.fs->is_directory(context)) {
    throw Error("image.build.context: the folder '" + context + "' does not exist",
                exit_code::kUsage);
  }
  const ImageRef base_ref = parse_image_ref(b.base);
  const ImageRef target = parse_image_ref(b.repository);
  Progress progress(env, "ktrain build");

  const std::int64_t epoch = source_date_epoch(env);
  TempDir tmp;
  LayerOptions lo = layer_options(env, settings, epoch, tmp);
  lo.skipped = [&](const std::string& p) {
    env.warn("skipping '" + p + "': not a file, folder or link");
  };

  LayerBlob launcher_layer =
      make_launcher_layer(launcher_files(env), kLauncherDir,
                          lo.cache_dir.empty() ? tmp.path : lo.cache_dir, lo, progress);

  RegistrySession registry(env, settings.insecure_registries, /*retry=*/true);
  RegistryClient& client = registry.client();

  // The base image: manifest and config only.
  const Repo base_repo{base_ref.registry, base_ref.repository};
  std::string base_digest;
  const Image base = fetch_image(client, base_ref, settings.platform, &base_digest);
  progress.step("base " + base_ref.str() + ": " + std::to_string(base.layers.size()) + " layers, " +
                base_digest.substr(0, 19));
  // The CUDA version the image needs, recorded in it (label dev.ktrain.cuda) so that
  // render and submit keep its pods off nodes whose driver is too old.
  std::string cuda = proj.train ? proj.train->cuda : "";
  std::string cuda_from = "train.cuda";
  if (cuda.empty() && proj.serve && !proj.serve->cuda.empty()) {
    cuda = proj.serve->cuda;
    cuda_from = "serve.cuda";
  }
  if (auto c = base.config.find("config"); cuda.empty() && c != base.config.end()) {
    if (auto need = image_cuda(nlohmann::json(*c))) {
      cuda = need->version.str();
      cuda_from = "the base image's " + need->source;
    }
  }
  if (!cuda.empty()) progress.step("CUDA " + cuda + " (from " + cuda_from + ")");

  // The workspace layer.
  const Workspace workspace = workspace_of(env, context, b);
  const LayerSource& ws = workspace.source;
  const std::string& ignore_file = workspace.ignore_file;
  lo.progress = [&](std::uint64_t n) { progress.bytes("workspace layer", n); };
  // When pushing, the workspace layer (the big one) goes to the registry while it is
  // built, as one streamed PATCH, so that compressing and uploading overlap; if that fails,
  // the layer is uploaded from its file below, as any other. Not when the folder is
  // unchanged since the cache last saw it (a --no-cache rebuild): the registry most
  // likely has that layer, and it is looked for there first, as a cached one is.
  const Repo repo{target.registry, target.repository};
  std::optional<BlobUploadStream> ws_stream;
  const std::string cache = cache_dir(env);
  const bool unchanged =
      settings.no_cache && !cache.empty() && indexed_digest(ws, lo, cache).has_value();
  if (settings.oci_layout.empty() && !settings.no_stream && !unchanged) {
    ws_stream.emplace(client, repo);
    lo.tee = [&](std::string_view d) { ws_stream->write(d); };
  }
  // What the layer holds, walked before it is read: a file changed while the layer is
  // made then looks changed to the next sync, rather than the other way round.
  const Tree ws_tree = tree_of(ws, nullptr);
  LayerBlob ws_layer;
  const auto ws_began = std::chrono::steady_clock::now();
  try {
    ws_layer = make_layer(ws, lo, "image.build.context '" + context + "'");
  } catch (const Error& e) {
    if (e.exit_status() == exit_code::kUsage && !ignore_file.empty()) {
      throw Error(std::string(e.what()) + "; " + ignore_file + " may exclude everything",
                  exit_code::kUsage);
    }
    throw;
  }
  const double ws_secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ws_began).count();
  const std::string ws_rate =
      ws_layer.from_cache ? "" : Progress::rate(static_cast<double>(ws_layer.tar_size), ws_secs);
  progress.step("layer workspace: " + human_bytes(static_cast<double>(ws_layer.tar_size)) + " -> " +
                human_bytes(static_cast<double>(ws_layer.size)) + " " + settings.compression + " " +
                ws_layer.digest.substr(0, 19) + (ws_layer.from_cache ? " (cached)" : "") +
                (ws_rate.empty() ? "" : " (" + ws_rate + ")"));
  lo.tee = nullptr;
  bool ws_streamed = false;  // the registry has the workspace layer already
  if (ws_stream && ws_stream->size() > 0) {
    ws_streamed = ws_stream->finish(ws_layer.digest);
    if (ws_streamed) {
      progress.step("uploaded layer " + ws_layer.digest.substr(0, 19) + " (" +
                    human_bytes(static_cast<double>(ws_layer.size)) + ", while it was built)");
    } else if (env.global.verbose > 0) {
      env.warn("uploading the workspace layer while it was built failed (" + ws_stream->error() +
               "); uploading it from its file");
    }
  }
  ws_stream.reset();

  // The new image.
  ConfigChanges ch;
  ch.entrypoint = {kLauncherPath};
  ch.working_dir = "/" + strip_slashes(b.workdir);
  ch.env = b.env;
  ch.created = rfc3339(epoch);
  ch.labels.emplace_back("org.opencontainers.image.created", ch.created);
  for (auto& label : source_labels(env, context)) ch.labels.push_back(std::move(label));
  ch.labels.emplace_back("org.opencontainers.image.base.name", base_ref.str());
  ch.labels.emplace_back("org.opencontainers.image.base.digest", base_digest);
  if (!cuda.empty()) ch.labels.emplace_back(kImageCudaLabel, cuda);
  const Image img = append(base,
                           {{launcher_layer, "COPY ktrain-launch " + std::string(kLauncherPath)},
                            {ws_layer, "COPY " + context + " /" + strip_slashes(b.workdir)}},
                           ch);
  const std::string digest = img.digest();

  BuildResult result;
  result.digest = digest;
  result.cuda = cuda;
  if (!settings.oci_layout.empty()) {
    const std::string& dir = settings.oci_layout;
    write_layout(dir, img, client, base_repo, settings.tags.empty() ? "" : settings.tags.front());
    progress.step("wrote " + dir + " (OCI image layout)");
    result.reference = "oci:" + dir + "@" + digest;
    return result;
  }

  std::vector<std::string> tags = settings.tags;
  if (!target.tag.empty()) tags.insert(tags.begin(), target.tag);
  // The tag that image.ref names in this repository is pushed too, so that it runs
  // what was built here wherever the project is rendered.
  if (!proj.image.ref.empty()) {
    const ImageRef ref = parse_image_ref(proj.image.ref);
    if (ref.name() == target.name() && ref.digest.empty() && !ref.tag.empty() &&
        std::find(tags.begin(), tags.end(), ref.tag) == tags.end()) {
      tags.push_back(ref.tag);
    }
  }
  result.bytes_uploaded = push_image(client, img, repo, base_repo, tags,
                                     ws_streamed ? ws_layer.digest : "", tmp.path, progress);
  result.reference = target.registry + "/" + target.repository + "@" + digest;
  result.repository = target.name();
  result.tags = tags;
  remember_tree(cache, digest, ws_tree);  // what a sync onto this image compares with
  return result;
}

BuildResult sync_project_image(Env& env, const project::Project& proj,
                               const BuildSettings& settings, const SyncBase& base) {
  if (!proj.image.build) {
    throw UsageError(proj.file +
                     ": --sync puts the workspace on the image that ktrain build "
                     "makes: set image.build (base and repository)");
  }
  const project::ImageBuild& b = *proj.image.build;
  const std::string context = b.context.empty() ? proj.directory : b.context;
  if (!env.fs->is_directory(context)) {
    throw Error("image.build.context: the folder '" + context + "' does not exist",
                exit_code::kUsage);
  }
  const ImageRef target = parse_image_ref(b.repository);
  const Repo repo{target.registry, target.repository};
  Progress progress(env, "ktrain build --sync");
  const std::int64_t epoch = source_date_epoch(env);
  TempDir tmp;
  LayerOptions lo = layer_options(env, settings, epoch, tmp);
  lo.temp_dir = tmp.path;
  const std::string cache = cache_dir(env);

  const Workspace workspace = workspace_of(env, context, b);
  Tree now = tree_of(workspace.source, [&](const std::string& p) {
    env.warn("skipping '" + p + "': not a file, folder or link");
  });
  // In a git work tree, what goes is what git tracks or would (untracked files that no
  // ignore file excludes), less what the ignore rules leave out. What git ignores
  // (outputs, caches, data) is not the sync's: it stays in the image as it is there.
  const std::optional<std::vector<std::string>> git_left_out = git_ignored(env, context);
  if (git_left_out) drop_paths(now, *git_left_out);

  // Onto the last image pushed, or, after kMaxSyncDepth syncs, onto the build under them
  // (one layer with every change since it), so that the layers do not pile up.
  std::string onto = base.digest;
  std::string full = base.onto.empty() ? base.digest : base.onto;
  int depth = base.depth;
  std::optional<Tree> before = recalled_tree(cache, onto);
  if (depth >= kMaxSyncDepth) {
    if (auto t = recalled_tree(cache, full)) {
      progress.step(std::to_string(depth) + " sync layers on " + full.substr(0, 19) +
                    ": this one goes on that build, with every change since it");
      onto = full;
      depth = 0;
      before = std::move(t);
    }
  }
  BuildResult result;
  result.repository = target.name();
  result.onto = full;
  const std::string onto_ref = target.registry + "/" + target.repository + "@" + onto;
  if (!before) {
    env.warn("what " + onto_ref +
             " holds is not known on this machine (its layer cache keeps it for images built "
             "or synced here): the whole workspace goes in the sync layer, and files removed "
             "since that build stay in the image; 'ktrain build' here makes the next sync small");
    result.whole = true;
  }
  if (before && git_left_out) {
    if (const std::size_t kept = drop_paths(*before, *git_left_out); kept > 0) {
      progress.step(std::to_string(kept) + " entries of " + onto.substr(0, 19) +
                    " are ones git ignores here: they stay as they are in the image");
    }
  }
  const TreeDelta delta = diff_trees(before ? *before : Tree{}, now);
  result.changed = delta.changed.size();
  result.removed = delta.removed.size();
  // Every file that goes is read before anything is sent: one that cannot be is bad
  // input (exit 2), not a sync that fails half-way.
  std::vector<std::string> unreadable;
  for (const auto& rel : delta.changed) {
    const ContextEntry& e = now.at(rel);
    if (e.type != ContextEntry::Type::kFile) continue;
    const int fd = ::open(e.abs.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      unreadable.push_back("'" + e.abs + "' (" + std::strerror(errno) + ")");
    } else {
      ::close(fd);
    }
  }
  if (!unreadable.empty()) {
    std::string names = unreadable[0];
    for (std::size_t i = 1; i < unreadable.size() && i < 5; ++i) names += ", " + unreadable[i];
    if (unreadable.size() > 5) names += " and " + std::to_string(unreadable.size() - 5) + " more";
    throw UsageError("cannot read " + names +
                     ": make it readable, or leave it out with .ktrainignore or "
                     "image.build.ignore; nothing was sent");
  }

  RegistrySession registry(env, settings.insecure_registries, /*retry=*/true);
  RegistryClient& client = registry.client();
  ImageRef onto_at = target;
  onto_at.tag.clear();
  onto_at.digest = onto;
  const Image onto_img = fetch_image(client, onto_at, settings.platform, nullptr);
  const auto& cfg = onto_img.config.contains("config") ? onto_img.config["config"]
                                                       : nlohmann::ordered_json::object();
  if (cfg.is_object() && cfg.contains("Labels") && cfg["Labels"].is_object()) {
    if (auto c = cfg["Labels"].find(kImageCudaLabel); c != cfg["Labels"].end() && c->is_string()) {
      result.cuda = c->get<std::string>();
    }
  }
  std::vector<std::string> tags = base.tags;
  for (const auto& t : settings.tags) {
    if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
  }
  if (delta.empty()) {
    progress.step("nothing changed since " + onto_ref);
    result.reference = onto_ref;
    result.digest = onto;
    result.depth = depth;
    result.unchanged = true;
    if (!settings.tags.empty()) {
      push_image(client, onto_img, repo, repo, settings.tags, "", tmp.path, progress);
    }
    result.tags = tags;
    return result;
  }

  // The layer: what changed, under the workdir, and a whiteout for each entry gone.
  const std::string prefix = strip_slashes(b.workdir);
  auto in_image = [&prefix](const std::string& rel) {
    return prefix.empty() ? rel : prefix + "/" + rel;
  };
  lo.progress = [&](std::uint64_t n) { progress.bytes("sync layer", n); };
  const LayerBlob layer = make_layer_of(lo, [&](TarWriter& tar) {
    for (const auto& rel : delta.changed) add_entry(tar, in_image(rel), now.at(rel));
    for (const auto& rel : delta.removed) tar.add_file(in_image(whiteout_of(rel)), 0644, "");
  });
  progress.step("sync layer: " + std::to_string(delta.changed.size()) + " changed, " +
                std::to_string(delta.removed.size()) + " removed, " +
                human_bytes(static_cast<double>(layer.size)) + " " + layer.digest.substr(0, 19));
  ConfigChanges ch;
  ch.created = rfc3339(epoch);
  // The Cmd stays as it was (append sets what it is given).
  if (cfg.is_object() && cfg.contains("Cmd") && cfg["Cmd"].is_array()) {
    for (const auto& c : cfg["Cmd"]) {
      if (c.is_string()) ch.cmd.push_back(c.get<std::string>());
    }
  }
  ch.labels.emplace_back(kSyncOntoLabel, full);
  const Image img = append(
      onto_img,
      {{layer, "COPY (ktrain build --sync: " + std::to_string(delta.changed.size()) + " changed, " +
                   std::to_string(delta.removed.size()) + " removed) /" + prefix}},
      ch);
  result.digest = img.digest();
  result.bytes_uploaded = push_image(client, img, repo, repo, tags, "", tmp.path, progress);
  result.reference = target.registry + "/" + target.repository + "@" + result.digest;
  result.tags = tags;
  result.depth = depth + 1;
  remember_tree(cache, result.digest, now);
  return result;
}

BuildResult build_launcher_image(Env& env, const std::string& reference,
                                 const BuildSettings& settings) {
  const ImageRef target = parse_image_ref(reference);
  if (!target.digest.empty()) {
    throw UsageError("--launcher-image " + reference +
                     ": name a repository and tag to push to, not a digest");
  }
  Progress progress(env, "ktrain build");
  const std::int64_t epoch = source_date_epoch(env);
  TempDir tmp;
  const LayerOptions lo = layer_options(env, settings, epoch, tmp);
  // FROM scratch: the launcher (and its GPU helper) at the root, nothing else. Static,
  // so it runs there; its --install copies it into the pod's emptyDir.
  LayerBlob layer = make_launcher_layer(
      launcher_files(env), "", lo.cache_dir.empty() ? tmp.path : lo.cache_dir, lo, progress);
  Image scratch;
  const auto parts = split_platform(settings.platform);
  scratch.config = {{"architecture", parts[1]}, {"os", parts[0]}};
  if (parts.size() > 2) scratch.config["variant"] = parts[2];
  scratch.config["config"] = nlohmann::ordered_json::object();
  ConfigChanges ch;
  ch.entrypoint = {"/ktrain-launch"};
  ch.cmd = {"--help"};
  ch.created = rfc3339(epoch);
  ch.labels.emplace_back("org.opencontainers.image.created", ch.created);
  ch.labels.emplace_back("org.opencontainers.image.title", "ktrain-launch");
  ch.labels.emplace_back("org.opencontainers.image.version", KTRAIN_VERSION);
  ch.labels.emplace_back("org.opencontainers.image.description",
                         "ktrain-launch, copied into pods whose image lacks it");
  const Image img = append(scratch, {{layer, "COPY ktrain-launch /ktrain-launch"}}, ch);
  BuildResult result;
  result.digest = img.digest();

  RegistrySession registry(env, settings.insecure_registries, /*retry=*/true);
  const Repo repo{target.registry, target.repository};
  std::vector<std::string> tags = settings.tags;
  tags.insert(tags.begin(), target.tag.empty() ? std::string(KTRAIN_VERSION) : target.tag);
  if (!settings.oci_layout.empty()) {
    const std::string& dir = settings.oci_layout;
    write_layout(dir, img, registry.client(), repo, tags.front());
    progress.step("wrote " + dir + " (OCI image layout)");
    result.reference = "oci:" + dir + "@" + result.digest;
    return result;
  }
  result.bytes_uploaded =
      push_image(registry.client(), img, repo, repo, tags, "", tmp.path, progress);
  result.reference = target.registry + "/" + target.repository + "@" + result.digest;
  return result;
}

std::string dockerfile_of(const project::ImageBuild& b) {
  std::string out = "# An equivalent of `ktrain build`; add RUN steps as needed.\n";
  out += "# Copy ktrain-launch (next to the ktrain binary) into the build context first.\n";
  out += "FROM " + b.base + "\n";
  out += "COPY --chmod=0755 ktrain-launch " + std::string(kLauncherPath) + "\n";
  for (const auto& [k, v] : b.env) out += "ENV " + k + "=" + nlohmann::json(v).dump() + "\n";
  out += "WORKDIR " + b.workdir + "\n";
  out += "COPY . " + b.workdir + "\n";
  out += "ENTRYPOINT [\"" + std::string(kLauncherPath) + "\"]\n";
  out += "CMD []\n";
  return out;
}

}  // namespace ktrain::oci
