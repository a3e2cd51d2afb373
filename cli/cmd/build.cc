#include "cmd/build.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>

#include "base/error.h"
#include "base/image_ref.h"
#include "base/progress.h"
#include "base/timefmt.h"
#include "cmd/built_image.h"
#include "oci/build_record.h"

namespace ktrain::cmd {

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
  if (sync && !oci_layout.empty()) {
    throw UsageError(
        "--sync pushes a layer onto the image in the registry; --oci-layout writes "
        "a whole image: use one of them");
  }
  if (sync && no_cache) {
    throw UsageError("--sync sends only what changed; --no-cache rebuilds everything: use one");
  }
  if (sync && !launcher_image.empty()) {
    throw UsageError("--sync is for the project's image, not --launcher-image");
  }
  for (const auto& t : tags) {
    if (t.empty() || t.size() > 128 || t.find_first_of("/:@ ") != std::string::npos) {
      throw UsageError("--tag " + t + ": a tag is up to 128 letters, digits, '_', '.' and '-'");
    }
  }
}

oci::BuildSettings BuildOptions::settings() const {
  oci::BuildSettings s;
  s.platform = platform;
  s.oci_layout = oci_layout;
  s.insecure_registries = insecure_registries;
  s.tags = tags;
  s.compression = compression;
  s.no_cache = no_cache;
  s.no_stream = no_stream;
  return s;
}

namespace {

/// build --sync: the changes since what the record names, as a layer on it; a full
/// build when the record names nothing.
oci::BuildResult sync_image(Env& env, const project::Project& proj, const BuildOptions& opts) {
  if (!proj.image.build) {
    throw UsageError(proj.file +
                     ": --sync puts the workspace on the image that ktrain build "
                     "makes: set image.build (base and repository)");
  }
  const ImageRef repo = parse_image_ref(proj.image.build->repository);
  oci::BuildSettings settings = opts.settings();
  if (!proj.image.ref.empty()) {
    // The pods must run what is synced: image.ref in another repository, or pinned by
    // digest, would not.
    const ImageRef r = parse_image_ref(proj.image.ref);
    if (r.name() != repo.name() || !r.digest.empty()) {
      throw UsageError(proj.file + ": --sync pushes to image.build.repository " + repo.name() +
                       ", but image.ref " + proj.image.ref +
                       " names another image, which the pods would run instead; name a tag "
                       "of " +
                       repo.name() + " in image.ref, or leave it out");
    }
    if (!r.tag.empty() &&
        std::find(settings.tags.begin(), settings.tags.end(), r.tag) == settings.tags.end()) {
      settings.tags.push_back(r.tag);
    }
  }
  if (!repo.tag.empty() &&
      std::find(settings.tags.begin(), settings.tags.end(), repo.tag) == settings.tags.end()) {
    settings.tags.push_back(repo.tag);
  }
  const std::string path = oci::build_record_path(proj.directory);
  std::optional<oci::BuiltImage> last;
  if (env.fs->exists(path))
    last = oci::find_built_image(env.fs->read_file(path), repo.name(), path);
  if (!last) {
    if (!env.global.quiet) {
      *env.err << "ktrain: nothing is built here yet for " << repo.name() << " (" << path
               << "): a full build first; later syncs send only what changes\n";
    }
    return oci::build_project_image(env, proj, opts.settings());
  }
  oci::SyncBase base;
  base.digest = last->digest;
  base.onto = last->onto;
  base.depth = last->depth;
  base.tags = last->tags;
  oci::BuildResult r = oci::sync_project_image(env, proj, settings, base);
  if (!env.global.quiet) {
    if (r.unchanged) {
      *env.err << "ktrain: nothing changed since " << r.reference << "\n";
    } else {
      *env.err << "ktrain: synced " << r.changed << (r.changed == 1 ? " entry" : " entries")
               << " changed and " << r.removed << " removed onto " << base.digest.substr(0, 19)
               << " (" << human_bytes(static_cast<double>(r.bytes_uploaded))
               << " uploaded): " << r.reference << "\n";
    }
  }
  return r;
}

}  // namespace

oci::BuildResult build_image(Env& env, const BuildOptions& opts) {
  const project::Project proj = opts.project.load(env);
  oci::BuildResult result = opts.sync && opts.oci_layout.empty()
                                ? sync_image(env, proj, opts)
                                : oci::build_project_image(env, proj, opts.settings());
  if (opts.oci_layout.empty()) {
    // Recorded beside the project: render and submit run this digest from now on.
    oci::BuiltImage built;
    built.repository = result.repository;
    built.digest = result.digest;
    built.tags = result.tags;
    built.cuda = result.cuda;
    built.built = format_rfc3339(env.clock->now());
    built.onto = result.onto;
    built.depth = result.depth;
    save_built_image(env, proj.directory, built);
  }
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
  if (dockerfile && sync) throw UsageError("--dockerfile and --sync cannot be combined");
  if (dockerfile) {
    const project::Project proj = project.load(env);
    if (!proj.image.build) throw UsageError(proj.file + ": image.build is not set");
    *env.out << oci::dockerfile_of(*proj.image.build);
    return exit_code::kOk;
  }
  const oci::BuildResult r = launcher_image.empty()
                                 ? build_image(env, *this)
                                 : oci::build_launcher_image(env, launcher_image, settings());
  if (o == "json") {
    nlohmann::ordered_json j;
    j["reference"] = r.reference;
    j["digest"] = r.digest;
    j["bytesUploaded"] = r.bytes_uploaded;
    if (!r.onto.empty()) {
      j["sync"] = {{"onto", r.repository + "@" + r.onto},
                   {"depth", r.depth},
                   {"changed", r.changed},
                   {"removed", r.removed},
                   {"unchanged", r.unchanged},
                   {"whole", r.whole}};
    }
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
  sub->add_flag("--sync", opts->sync,
                "Push only what changed in the workspace since the last build here (files "
                "added or changed, and whiteouts for those removed) as one thin layer on it; "
                "a full build when nothing is built yet");
  sub->callback([opts, &env, &result] {
    opts->validate();
    result.status = opts->run(env);
  });
}

}  // namespace ktrain::cmd
