#include "cmd/build.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>

#include "base/cuda.h"
#include "base/error.h"
#include "base/image_ref.h"
#include "base/progress.h"
#include "base/timefmt.h"
#include "cmd/built_image.h"
#include "net/curl_transport.h"
#include "net/log.h"
#include "net/retry.h"
#include "oci/blob_file.h"
#include "oci/build_record.h"
#include "oci/digest.h"
#include "oci/image.h"
#include "oci/layer.h"
#include "oci/layout.h"
#include "oci/registry.h"
#include "render/render.h"

namespace ktrain::cmd {

namespace fs = std::filesystem;

namespace {

constexpr char kLauncherDir[] = "opt/ktrain/bin";
constexpr char kLauncherPath[] = "/opt/ktrain/bin/ktrain-launch";

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

/// The layer cache: $KTRAIN_CACHE_DIR, else under $XDG_CACHE_HOME or $HOME; "" (no
/// cache) when none is set, rather than a shared folder whose name others can guess.
std::string cache_dir(const Env& env) {
  if (auto d = env.var("KTRAIN_CACHE_DIR"); d && !d->empty()) return *d;
  if (auto d = env.var("XDG_CACHE_HOME"); d && !d->empty()) return *d + "/ktrain";
  if (auto d = env.var("HOME"); d && !d->empty()) return *d + "/.cache/ktrain";
  return "";
}

/// Runs git in `dir` and returns its trimmed output, or "" when git or the repository
/// is not there.
std::string git(const Env& env, const std::string& dir, const std::vector<std::string>& args) {
  auto run = oci::real_helper_runner(env);
  std::vector<std::string> argv = {"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  try {
    auto [status, out] = run(argv, "");
    if (status != 0) return "";
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  } catch (const Error&) {
    return "";
  }
}

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

std::string strip_slashes(std::string s) {
  while (!s.empty() && s.front() == '/') s.erase(s.begin());
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

/// The launcher's files: ktrain-launch, and the GPU helper ktrain-gpucheck when it is
/// beside it (the preflight's GPU and NCCL checks need it; without it they are skipped).
std::vector<std::string> launcher_files(const Env& env) {
  const std::string launcher = find_launcher(env);
  std::vector<std::string> files = {launcher};
  const std::string helper = (fs::path(launcher).parent_path() / "ktrain-gpucheck").string();
  std::error_code ec;
  if (fs::is_regular_file(helper, ec)) files.push_back(helper);
  return files;
}

/// A layer holding `files` under `prefix`, made from stable hard links in `stage_root`
/// (the cache folder), so that its cache entry stays valid while the files do not change.
oci::LayerBlob make_launcher_layer(const std::vector<std::string>& files, const std::string& prefix,
                                   const std::string& stage_root, oci::LayerOptions lo,
                                   Progress& progress) {
  const std::string stage = stage_root + (prefix.empty() ? "/launcher-image" : "/launcher");
  oci::make_private_dir(stage);
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
  oci::LayerSource src;
  src.root = stage;
  src.prefix = prefix;
  lo.progress = [&](std::uint64_t n) { progress.bytes("ktrain-launch layer", n); };
  oci::LayerBlob layer = oci::make_layer(src, lo, "the ktrain-launch layer");
  progress.step("layer ktrain-launch: " + human_bytes(static_cast<double>(layer.size)) + " " +
                layer.digest.substr(0, 19) + (layer.from_cache ? " (cached)" : ""));
  return layer;
}

/// The registry client and the transports under it.
struct RegistryStack {
  net::CurlTransport curl;
  net::RetryingTransport retrying;
  std::unique_ptr<net::LoggingTransport> logging;
  oci::DockerConfigCredentials creds;
  oci::RegistryClient client;

  RegistryStack(Env& env, const BuildOptions& opts)
      : retrying(curl, *env.clock, retry_policy()),
        logging(env.global.verbose > 0 ? std::make_unique<net::LoggingTransport>(
                                             retrying, *env.err, *env.clock, env.global.verbose)
                                       : nullptr),
        creds(env, oci::real_helper_runner(env)),
        client(logging ? static_cast<net::HttpTransport&>(*logging) : retrying, creds,
               registry_options(opts)) {}

  static net::RetryPolicy retry_policy() {
    net::RetryPolicy p;
    p.max_attempts = 4;
    return p;
  }
  static oci::RegistryOptions registry_options(const BuildOptions& opts) {
    oci::RegistryOptions ro;
    ro.insecure_hosts = opts.insecure_registries;
    return ro;
  }
};

}  // namespace

std::optional<ImageCuda> inspect_image_cuda(Env& env, const std::string& image,
                                            const std::vector<std::string>& insecure_registries,
                                            const std::string& platform) {
  const ImageRef ref = parse_image_ref(image);
  net::CurlTransport curl;
  std::unique_ptr<net::LoggingTransport> logging =
      env.global.verbose > 0
          ? std::make_unique<net::LoggingTransport>(curl, *env.err, *env.clock, env.global.verbose)
          : nullptr;
  oci::DockerConfigCredentials creds(env, oci::real_helper_runner(env));
  oci::RegistryOptions ro;
  ro.insecure_hosts = insecure_registries;
  oci::RegistryClient client(logging ? static_cast<net::HttpTransport&>(*logging) : curl, creds,
                             ro);
  return with_context("reading the config of " + ref.str(), [&] {
    const oci::ManifestBytes m = client.get_manifest(ref, platform);
    const oci::Descriptor cfg = oci::manifest_config(m.bytes);
    const std::string config = client.get_blob({ref.registry, ref.repository}, cfg.digest,
                                               static_cast<std::int64_t>(cfg.size));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(config);
    } catch (const nlohmann::json::exception&) {
      throw Error("the image config is not JSON");
    }
    return j.is_object() && j.contains("config") ? image_cuda(j["config"]) : std::nullopt;
  });
}

void fill_cuda_from_image(Env& env, project::Project& project,
                          const std::vector<std::string>& insecure_registries) {
  const bool train = project.train && project.train->gpus > 0 && project.train->cuda.empty();
  const bool serve = project.serve && project.serve->gpus > 0 && project.serve->cuda.empty();
  if (!train && !serve) return;
  auto note = [&env](const std::string& m) {
    if (env.global.verbose > 0) *env.err << "ktrain: " << m << "\n";
  };
  std::string image;
  try {
    image = render::image_to_run(project, {});
    auto need = inspect_image_cuda(env, image, insecure_registries);
    if (!need) {
      note(image + " does not say which CUDA version it needs (no label " + kImageCudaLabel +
           ", CUDA_VERSION or NVIDIA_REQUIRE_CUDA): set train.cuda to keep its pods off "
           "nodes whose driver is too old");
      return;
    }
    note("CUDA " + need->version.str() + " (from " + image + "'s " + need->source +
         "): pods go only to nodes whose driver runs it");
    if (train) project.train->cuda = need->version.str();
    if (serve) project.serve->cuda = need->version.str();
  } catch (const Error& e) {
    note("the CUDA version that " + (image.empty() ? "the image" : image) + " needs is unknown (" +
         e.what() + "); set train.cuda to keep its pods off nodes whose driver is too old");
  }
}

namespace {

/// Uploads the file at `path` as blob `digest` of `size` bytes.
void upload_file(oci::RegistryClient& client, const oci::Repo& repo, const std::string& digest,
                 std::uint64_t size, const std::string& path,
                 const std::function<void(std::uint64_t)>& progress) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error("cannot read '" + path + "'");
  try {
    client.upload_blob(
        repo, digest, size,
        [&](std::uint64_t off, char* buf, std::size_t len) -> std::size_t {
          if (::fseeko(f, static_cast<off_t>(off), SEEK_SET) != 0) return 0;
          return std::fread(buf, 1, len, f);
        },
        progress);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  std::fclose(f);
}

/// Checks that a layer reused from the cache still has its digest and size before it is
/// sent: a blob changed on disk is dropped from the cache (the next build makes it
/// again) and the push stops.
void verify_cached_layer(const oci::Layer& l) {
  std::uint64_t size = 0;
  const std::string got = oci::sha256_file(l.local_path, &size);
  if (got == l.desc.digest && size == l.desc.size) return;
  std::error_code ec;
  fs::remove(l.local_path, ec);
  throw Error("the cached layer '" + l.local_path + "' does not match its digest " + l.desc.digest +
              " (it is " + got + ", " + std::to_string(size) +
              " bytes): it changed on disk and was dropped from the cache; build again");
}

/// Pushes `img` to `repo`: the blobs the registry lacks (base layers mounted from
/// `base_repo` on the same registry, else copied through `tmp_dir`), the config, then
/// the manifest by digest and under each of `tags`. `skip` is a layer digest already
/// uploaded ("" for none). Returns the bytes uploaded.
std::uint64_t push_image(oci::RegistryClient& client, const oci::Image& img, const oci::Repo& repo,
                         const oci::Repo& base_repo, const std::vector<std::string>& tags,
                         const std::string& skip, const std::string& tmp_dir, Progress& progress) {
  std::uint64_t present = 0;
  for (const auto& l : img.layers) {
    const std::string short_digest = l.desc.digest.substr(0, 19);
    if (!skip.empty() && l.desc.digest == skip) continue;
    if (client.blob_exists(repo, l.desc.digest)) {
      ++present;
      continue;
    }
    if (l.local_path.empty()) {
      if (base_repo.registry == repo.registry &&
          client.mount_blob(repo, l.desc.digest, base_repo.repository)) {
        progress.step("mounted base layer " + short_digest + " from " + base_repo.repository);
        continue;
      }
      // Another registry: copy the base layer through a temporary file, verified.
      const std::string copy =
          tmp_dir + "/" + oci::digest_hex(l.desc.digest, "copying a base layer");
      oci::download_blob_file(client, base_repo, l.desc.digest, l.desc.size, copy, 0600);
      upload_file(client, repo, l.desc.digest, l.desc.size, copy, nullptr);
      std::error_code ec;
      fs::remove(copy, ec);
      progress.step("copied base layer " + short_digest + " (" +
                    human_bytes(static_cast<double>(l.desc.size)) + ")");
      continue;
    }
    if (l.cached) verify_cached_layer(l);
    const std::string what = "uploading " + short_digest;
    const auto began = std::chrono::steady_clock::now();
    upload_file(client, repo, l.desc.digest, l.desc.size, l.local_path,
                [&](std::uint64_t n) { progress.bytes(what, n); });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const std::string rate = Progress::rate(static_cast<double>(l.desc.size), secs);
    progress.step("uploaded layer " + short_digest + " (" +
                  human_bytes(static_cast<double>(l.desc.size)) +
                  (rate.empty() ? "" : ", " + rate) + ")");
  }
  const oci::Descriptor cfg = img.config_descriptor();
  if (!client.blob_exists(repo, cfg.digest)) {
    const std::string bytes = img.config_bytes();
    client.upload_blob(repo, cfg.digest, bytes.size(),
                       [&](std::uint64_t off, char* buf, std::size_t len) -> std::size_t {
                         if (off >= bytes.size()) return 0;
                         std::size_t n =
                             std::min(len, bytes.size() - static_cast<std::size_t>(off));
                         std::memcpy(buf, bytes.data() + off, n);
                         return n;
                       });
  }
  const std::string manifest = img.manifest_bytes();
  const std::string digest = img.digest();
  if (!client.manifest_exists(repo, digest)) {
    client.put_manifest(repo, digest, oci::media::kOciManifest, manifest);
  }
  for (const auto& t : tags) client.put_manifest(repo, t, oci::media::kOciManifest, manifest);
  progress.step("pushed " + repo.str() + "@" + digest + ": uploaded " +
                human_bytes(static_cast<double>(client.bytes_uploaded())) + ", " +
                std::to_string(present) + " of " + std::to_string(img.layers.size()) +
                " layers already there");
  return client.bytes_uploaded();
}

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
oci::LayerOptions layer_options(const Env& env, const BuildOptions& opts, std::int64_t epoch,
                                const TempDir& tmp) {
  oci::LayerOptions lo;
  lo.compression = opts.compression == "zstd" ? oci::Compression::kZstd : oci::Compression::kGzip;
  lo.mtime = epoch;
  lo.temp_dir = tmp.path;
  if (!opts.no_cache) lo.cache_dir = cache_dir(env);
  if (!opts.no_cache && lo.cache_dir.empty() && env.global.verbose > 0) {
    env.warn("no layer cache: neither KTRAIN_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
  }
  return lo;
}

/// "linux/arm64/v8" -> {linux, arm64, v8} (validated by BuildOptions::validate).
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

std::string print_dockerfile(const project::ImageBuild& b) {
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

}  // namespace

void BuildOptions::validate() const {
  if (compression != "gzip" && compression != "zstd") {
    throw UsageError("--compression " + compression + ": expected gzip or zstd");
  }
  if (oci_layout.rfind("oci:", 0) == 0) {
    throw UsageError("--oci-layout " + oci_layout + ": name the folder alone, without oci:");
  }
  int slashes = static_cast<int>(std::count(platform.begin(), platform.end(), '/'));
  if (slashes < 1 || slashes > 2 || platform.front() == '/' || platform.back() == '/') {
    throw UsageError("--platform " + platform +
                     ": expected os/arch or os/arch/variant, like linux/amd64");
  }
  if (!launcher_image.empty()) {
    if (std::string problem = image_ref_problem(launcher_image); !problem.empty()) {
      throw UsageError("--launcher-image " + launcher_image + ": " + problem);
    }
  }
  for (const auto& t : tags) {
    if (t.empty() || t.size() > 128 || t.find_first_of("/:@ ") != std::string::npos) {
      throw UsageError("--tag " + t + ": a tag is up to 128 letters, digits, '_', '.' and '-'");
    }
  }
}

BuildResult build_image(Env& env, const BuildOptions& opts) {
  const project::Project proj = opts.project.load(env);
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
  oci::LayerOptions lo = layer_options(env, opts, epoch, tmp);
  lo.skipped = [&](const std::string& p) {
    env.warn("skipping '" + p + "': not a file, folder or link");
  };

  oci::LayerBlob launcher_layer =
      make_launcher_layer(launcher_files(env), kLauncherDir,
                          lo.cache_dir.empty() ? tmp.path : lo.cache_dir, lo, progress);

  RegistryStack registry(env, opts);
  oci::RegistryClient& client = registry.client;

  // The base image: manifest and config only.
  const oci::Repo base_repo{base_ref.registry, base_ref.repository};
  oci::ManifestBytes base_manifest = client.get_manifest(base_ref, opts.platform);
  // Every digest in the manifest is checked before it is used (in a URL, a file name).
  const oci::Image base = with_context("pulling " + base_ref.str(), [&] {
    const oci::Descriptor cfg = oci::manifest_config(base_manifest.bytes);
    const std::string config =
        client.get_blob(base_repo, cfg.digest, static_cast<std::int64_t>(cfg.size));
    return oci::image_from_manifest(base_manifest.bytes, config);
  });
  progress.step("base " + base_ref.str() + ": " + std::to_string(base.layers.size()) + " layers, " +
                base_manifest.digest.substr(0, 19));
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
  oci::LayerSource ws;
  ws.root = context;
  ws.prefix = strip_slashes(b.workdir);
  ws.ignore.add(".git");
  ws.ignore.add(oci::kStateDir);  // what build records: not part of the image
  std::string ignore_file;
  for (const char* name : {".ktrainignore", ".dockerignore"}) {
    const std::string p = context + "/" + name;
    if (env.fs->exists(p)) {
      ws.ignore.add_file_text(env.fs->read_file(p));
      ignore_file = p;
      break;
    }
  }
  for (const auto& i : b.ignore) ws.ignore.add(i);
  lo.progress = [&](std::uint64_t n) { progress.bytes("workspace layer", n); };
  // When pushing, the workspace layer (the big one) goes to the registry while it is
  // built, as one streamed PATCH, so that compressing and uploading overlap; if that fails,
  // the layer is uploaded from its file below, as any other. Not when the folder is
  // unchanged since the cache last saw it (a --no-cache rebuild): the registry most
  // likely has that layer, and it is looked for there first, as a cached one is.
  const oci::Repo repo{target.registry, target.repository};
  std::optional<oci::BlobUploadStream> ws_stream;
  const std::string cache = cache_dir(env);
  const bool unchanged =
      opts.no_cache && !cache.empty() && oci::indexed_digest(ws, lo, cache).has_value();
  if (opts.oci_layout.empty() && !opts.no_stream && !unchanged) {
    ws_stream.emplace(client, repo);
    lo.tee = [&](std::string_view d) { ws_stream->write(d); };
  }
  oci::LayerBlob ws_layer;
  const auto ws_began = std::chrono::steady_clock::now();
  try {
    ws_layer = oci::make_layer(ws, lo, "image.build.context '" + context + "'");
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
                human_bytes(static_cast<double>(ws_layer.size)) + " " + opts.compression + " " +
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
  oci::ConfigChanges ch;
  ch.entrypoint = {kLauncherPath};
  ch.working_dir = "/" + strip_slashes(b.workdir);
  ch.env = b.env;
  ch.created = oci::rfc3339(epoch);
  ch.labels.emplace_back("org.opencontainers.image.created", ch.created);
  std::string source = git(env, context, {"config", "--get", "remote.origin.url"});
  std::string revision = git(env, context, {"rev-parse", "HEAD"});
  if (!source.empty())
    ch.labels.emplace_back("org.opencontainers.image.source", net::redact_url(source));
  if (!revision.empty()) ch.labels.emplace_back("org.opencontainers.image.revision", revision);
  ch.labels.emplace_back("org.opencontainers.image.base.name", base_ref.str());
  ch.labels.emplace_back("org.opencontainers.image.base.digest", base_manifest.digest);
  if (!cuda.empty()) ch.labels.emplace_back(kImageCudaLabel, cuda);
  const oci::Image img =
      oci::append(base,
                  {{launcher_layer, "COPY ktrain-launch " + std::string(kLauncherPath)},
                   {ws_layer, "COPY " + context + " /" + strip_slashes(b.workdir)}},
                  ch);
  const std::string digest = img.digest();

  BuildResult result;
  result.digest = digest;
  result.cuda = cuda;
  if (!opts.oci_layout.empty()) {
    const std::string& dir = opts.oci_layout;
    oci::write_layout(dir, img, client, base_repo, opts.tags.empty() ? "" : opts.tags.front());
    progress.step("wrote " + dir + " (OCI image layout)");
    result.reference = "oci:" + dir + "@" + digest;
    return result;
  }

  std::vector<std::string> tags = opts.tags;
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
  // Recorded beside the project: render and submit run this digest from now on.
  oci::BuiltImage built;
  built.repository = target.name();
  built.digest = digest;
  built.tags = tags;
  built.cuda = cuda;
  built.built = format_rfc3339(env.clock->now());
  save_built_image(env, proj.directory, built);
  return result;
}

BuildResult build_launcher_image(Env& env, const BuildOptions& opts) {
  const ImageRef target = parse_image_ref(opts.launcher_image);
  if (!target.digest.empty()) {
    throw UsageError("--launcher-image " + opts.launcher_image +
                     ": name a repository and tag to push to, not a digest");
  }
  Progress progress(env, "ktrain build");
  const std::int64_t epoch = source_date_epoch(env);
  TempDir tmp;
  const oci::LayerOptions lo = layer_options(env, opts, epoch, tmp);
  // FROM scratch: the launcher (and its GPU helper) at the root, nothing else. Static,
  // so it runs there; its --install copies it into the pod's emptyDir.
  oci::LayerBlob layer = make_launcher_layer(
      launcher_files(env), "", lo.cache_dir.empty() ? tmp.path : lo.cache_dir, lo, progress);
  oci::Image scratch;
  const auto parts = split_platform(opts.platform);
  scratch.config = {{"architecture", parts[1]}, {"os", parts[0]}};
  if (parts.size() > 2) scratch.config["variant"] = parts[2];
  scratch.config["config"] = nlohmann::ordered_json::object();
  oci::ConfigChanges ch;
  ch.entrypoint = {"/ktrain-launch"};
  ch.cmd = {"--help"};
  ch.created = oci::rfc3339(epoch);
  ch.labels.emplace_back("org.opencontainers.image.created", ch.created);
  ch.labels.emplace_back("org.opencontainers.image.title", "ktrain-launch");
  ch.labels.emplace_back("org.opencontainers.image.version", KTRAIN_VERSION);
  ch.labels.emplace_back("org.opencontainers.image.description",
                         "ktrain-launch, copied into pods whose image lacks it");
  const oci::Image img = oci::append(scratch, {{layer, "COPY ktrain-launch /ktrain-launch"}}, ch);
  BuildResult result;
  result.digest = img.digest();

  RegistryStack registry(env, opts);
  const oci::Repo repo{target.registry, target.repository};
  std::vector<std::string> tags = opts.tags;
  tags.insert(tags.begin(), target.tag.empty() ? std::string(KTRAIN_VERSION) : target.tag);
  if (!opts.oci_layout.empty()) {
    const std::string& dir = opts.oci_layout;
    oci::write_layout(dir, img, registry.client, repo, tags.front());
    progress.step("wrote " + dir + " (OCI image layout)");
    result.reference = "oci:" + dir + "@" + result.digest;
    return result;
  }
  result.bytes_uploaded =
      push_image(registry.client, img, repo, repo, tags, "", tmp.path, progress);
  result.reference = target.registry + "/" + target.repository + "@" + result.digest;
  return result;
}

int BuildOptions::run(Env& env) const {
  const std::string& o = env.global.output;
  if (!o.empty() && o != "json") {
    throw UsageError("-o " + o +
                     ": build prints the reference, or -o json (--oci-layout DIR "
                     "writes an OCI image layout)");
  }
  if (dockerfile && !launcher_image.empty()) {
    throw UsageError("--dockerfile and --launcher-image cannot be combined");
  }
  if (dockerfile && !o.empty()) throw UsageError("--dockerfile prints a Dockerfile, not -o " + o);
  if (dockerfile) {
    const project::Project proj = project.load(env);
    if (!proj.image.build) throw UsageError(proj.file + ": image.build is not set");
    *env.out << print_dockerfile(*proj.image.build);
    return exit_code::kOk;
  }
  const BuildResult r =
      launcher_image.empty() ? build_image(env, *this) : build_launcher_image(env, *this);
  if (o == "json") {
    nlohmann::ordered_json j;
    j["reference"] = r.reference;
    j["digest"] = r.digest;
    j["bytesUploaded"] = r.bytes_uploaded;
    *env.out << j.dump(2) << "\n";
  } else {
    *env.out << r.reference << "\n";
  }
  env.out->flush();
  return exit_code::kOk;
}

void add_build_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<BuildOptions>();
  auto* sub = app.add_subcommand(
      "build",
      "Build the training image (base + ktrain-launch + workspace) and "
      "push it; prints repo@sha256:... (-o json: reference, digest, bytes uploaded)");
  opts->project.add_to(*sub);
  sub->add_option("--platform", opts->platform,
                  "Platform of the base image to use (default linux/amd64)");
  sub->add_option("--oci-layout", opts->oci_layout,
                  "Write an OCI image layout to DIR instead of pushing (prints oci:DIR@sha256:...)")
      ->type_name("DIR");
  sub->add_flag("--dockerfile", opts->dockerfile, "Print an equivalent Dockerfile and exit");
  sub->add_option("--launcher-image", opts->launcher_image,
                  "Build the launcher image instead (FROM scratch: ktrain-launch and its GPU "
                  "helper) and push it to REF (default tag: this version); no project file "
                  "needed. Name it with launcher.image or KTRAIN_LAUNCHER_IMAGE")
      ->type_name("REF");
  sub->add_option("--insecure-registry", opts->insecure_registries,
                  "Use plain HTTP for this registry host (localhost and 127.0.0.1 always do)");
  sub->add_option("--tag", opts->tags, "Also push under this tag (repeatable)");
  sub->add_option("--compression", opts->compression, "Layer compression (default gzip)")
      ->type_name("gzip|zstd");
  sub->add_flag("--no-cache", opts->no_cache, "Rebuild every layer instead of reusing cached ones");
  sub->add_flag("--no-stream", opts->no_stream,
                "Upload the workspace layer after building it rather than while building it");
  sub->callback([opts, &env, &result] {
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
