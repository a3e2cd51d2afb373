// Which image a project's pods run, from the project and the record that build keeps.

#include "cmd/built_image.h"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "base/cuda.h"
#include "base/error.h"
#include "base/image_ref.h"
#include "oci/pipeline.h"
#include "oci/publish.h"
#include "render/render.h"

namespace ktrain::cmd {

ImageChoice choose_image(const project::Project& p, const std::optional<oci::BuiltImage>& built,
                         const std::string& record_path) {
  ImageChoice c;
  const std::string& ref = p.image.ref;
  if (!p.image.build) {
    c.image = ref;
    c.why = "image " + ref;
    return c;
  }
  const ImageRef repo = parse_image_ref(p.image.build->repository);
  const std::string name = repo.name();
  std::string tag = repo.tag;
  if (!ref.empty()) {
    const ImageRef r = parse_image_ref(ref);
    if (r.name() != name) {
      c.image = ref;
      c.why = "image.ref " + ref + " (not image.build.repository, which build pushes to)";
      return c;
    }
    if (!r.digest.empty()) {
      c.image = ref;
      c.why = "image.ref " + ref + " (pinned by digest)";
      return c;
    }
    tag = r.tag;
  }
  const std::string when = built && !built->built.empty() ? " at " + built->built : "";
  if (built && (tag.empty() ||
                std::find(built->tags.begin(), built->tags.end(), tag) != built->tags.end())) {
    c.image = built->reference();
    c.cuda = built->cuda;
    c.why = c.image + ", built by ktrain build" + when + " (" + record_path + ")";
    return c;
  }
  if (!tag.empty()) {
    c.image = name + ":" + tag;
    c.why = "tag " + c.image;
    if (built) {
      c.warning = "image.ref names the tag " + tag + ", which the last ktrain build" + when +
                  " did not push (it pushed " + built->reference() + "): the pods run whatever " +
                  c.image + " is in the registry";
      c.why += " (not the last build)";
    } else {
      c.why += " (no build recorded here: whatever the registry has under it)";
    }
    return c;
  }
  c.image = name;
  c.why = name + " (nothing built here: it would pull " + name + ":latest)";
  c.problem = "image.build.repository " + name + ": nothing is built yet (" + record_path +
              " has no entry for it), so the pods would pull " + name +
              ":latest, which ktrain build does not push; run 'ktrain build' first, or "
              "'ktrain submit --build', or name a pushed tag in image.ref";
  return c;
}

ImageChoice image_choice(Env& env, const project::Project& p) {
  std::optional<oci::BuiltImage> built;
  const std::string path = oci::build_record_path(p.directory);
  if (p.image.build && env.fs->exists(path)) {
    const std::string name = parse_image_ref(p.image.build->repository).name();
    built = oci::find_built_image(env.fs->read_file(path), name, path);
  }
  return choose_image(p, built, path);
}

std::optional<ImageChoice> use_built_image(Env& env, project::Project& p, bool strict) {
  if (!p.image.build) return std::nullopt;
  const ImageChoice c = image_choice(env, p);
  if (!c.problem.empty()) {
    if (strict) throw UsageError(p.file + ": " + c.problem);
    env.warn(c.problem);
  }
  if (!c.warning.empty()) env.warn(c.warning);
  p.image.ref = c.image;
  if (!c.cuda.empty()) {
    if (p.train && p.train->cuda.empty()) p.train->cuda = c.cuda;
    if (p.serve && p.serve->cuda.empty()) p.serve->cuda = c.cuda;
  }
  return c;
}

void save_built_image(Env& env, const std::string& project_dir, const oci::BuiltImage& built) {
  const std::string path = oci::build_record_path(project_dir);
  try {
    const std::string dir = path.substr(0, path.rfind('/'));
    if (!env.fs->is_directory(dir)) {
      // Only the real file system has folders to make (tests' in-memory ones have none).
      if (dynamic_cast<RealFileSystem*>(env.fs) != nullptr) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw Error("cannot make '" + dir + "': " + ec.message());
      }
      if (!env.fs->exists(dir + "/.gitignore")) {
        env.fs->write_file(dir + "/.gitignore",
                           "# ktrain's state on this machine (what ktrain build pushed)\n*\n");
      }
    }
    const std::string old = env.fs->exists(path) ? env.fs->read_file(path) : "";
    env.fs->write_file(path, oci::record_built_image(old, built));
  } catch (const Error& e) {
    env.warn(std::string("could not record the build in ") + path + " (" + e.what() +
             "): render and submit will not find " + built.reference() +
             "; name it in image.ref, or use 'ktrain submit --build'");
  }
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
    auto need = oci::inspect_image_cuda(env, image, insecure_registries);
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

void add_push_launcher_flag(CLI::App& sub, std::string& to) {
  sub.add_option("--push-launcher", to,
                 "Push the launcher image (ktrain-launch, for images without it) to this "
                 "repository[:tag] and use it by digest; by default it goes beside "
                 "image.build.repository when the project names no launcher.image")
      ->type_name("REF");
}

void check_push_launcher_flag(const std::string& ref) {
  if (std::string problem = image_ref_problem(ref); !problem.empty()) {
    throw UsageError("--push-launcher " + ref + ": " + problem);
  }
  if (!parse_image_ref(ref).digest.empty()) {
    throw UsageError("--push-launcher " + ref +
                     ": name a repository (and tag) to push to, not a digest");
  }
}

void provide_launcher_image(Env& env, project::Project& p, const LauncherPush& how) {
  if (!p.train) return;
  const std::string image = render::image_to_run(p, {});
  if (!render::launcher_plan(p, image).inject) return;
  if (how.to.empty() && p.launcher.image_from != "default") return;  // the project's own
  std::string target = how.to;
  if (target.empty() && p.image.build) {
    // Beside the project's own repository: REGISTRY/PATH/ktrain-launch.
    const ImageRef repo = parse_image_ref(p.image.build->repository);
    const auto slash = repo.repository.rfind('/');
    target = repo.registry + "/" +
             (slash == std::string::npos ? std::string() : repo.repository.substr(0, slash + 1)) +
             "ktrain-launch:" + KTRAIN_VERSION;
  }
  if (target.empty()) {
    throw UsageError(
        p.file + ": the image " + image +
        " gets ktrain-launch from the launcher image (launcher.inject: auto injects it into "
        "images that ktrain build did not make), and ktrain's default, " +
        project::Launcher::default_image() +
        ", is not published. Push one to a registry the cluster pulls from, either with\n"
        "  ktrain " +
        how.verb +
        " --push-launcher REGISTRY/PATH/ktrain-launch ...\n"
        "or with\n"
        "  ktrain build --launcher-image REGISTRY/PATH/ktrain-launch:" KTRAIN_VERSION
        "\nand name it in launcher.image (or KTRAIN_LAUNCHER_IMAGE); or build the image "
        "itself with image.build and ktrain build, which puts the launcher in it");
  }
  ImageRef ref = parse_image_ref(target);  // (submit refuses a digest in --push-launcher)
  if (ref.tag.empty()) ref.tag = KTRAIN_VERSION;
  if (!how.push) {
    p.launcher.image = ref.str();
    p.launcher.image_from = "submit";
    return;
  }
  oci::BuildSettings settings;
  settings.platform = how.platform;
  settings.insecure_registries = how.insecure_registries;
  const oci::BuildResult r = oci::build_launcher_image(env, ref.str(), settings);
  p.launcher.image = r.reference;
  p.launcher.image_from = "submit";
  if (!env.global.quiet) {
    *env.err << "ktrain: the launcher image for " << image << ": " << r.reference
             << (r.bytes_uploaded > 0 ? " (pushed)" : " (the registry had it)") << "\n";
  }
}

}  // namespace ktrain::cmd
