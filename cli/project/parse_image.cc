// ktrain.yaml: image (a reference, or one to build) and image.build.

#include "project/parse_internal.h"

namespace ktrain::project::detail {

void ProjectParser::image(const Value& v, Image& out) {
  if (v.kind == Kind::kScalar) {
    if (auto s = c_.image(v, "image")) out.ref = *s;
    return;
  }
  if (!c_.map(v, "image", "registry.example.com/team/app:v1 or {ref: ..., build: {...}}")) return;
  c_.check_keys(v, "image", "image", kImageKeys);
  if (const Value* r = field(v, "ref"))
    if (auto s = c_.image(*r, "image.ref")) out.ref = *s;
  if (const Value* r = field(v, "pullSecrets")) {
    if (c_.list(*r, "image.pullSecrets", "[regcred]")) {
      for (std::size_t i = 0; i < r->items.size(); ++i) {
        if (auto s = c_.dns_subdomain(r->items[i], "image.pullSecrets[" + std::to_string(i) + "]",
                                      253, "regcred"))
          out.pull_secrets.push_back(*s);
      }
    }
  }
  if (const Value* b = field(v, "build")) {
    out.build.emplace();
    build(*b, *out.build);
  }
  if (!field(v, "ref") && !field(v, "build")) {
    c_.add(v.origin, "image.ref",
           "missing; give `ref` (the image to run) or `build` (how ktrain build makes it)");
  }
}

void ProjectParser::build(const Value& v, ImageBuild& out) {
  const std::string path = "image.build";
  out.context = directory_;
  if (!c_.map(v, path, "{base: nvcr.io/nvidia/pytorch:24.08-py3, repository: ...}")) return;
  c_.check_keys(v, path, path, kBuildKeys);
  if (const Value* b = field(v, "base")) {
    if (auto s = c_.image(*b, path + ".base")) out.base = *s;
  } else {
    c_.add(v.origin, path + ".base",
           "missing; the image to build on, like nvcr.io/nvidia/pytorch:24.08-py3");
  }
  if (const Value* r = field(v, "repository")) {
    if (auto s = c_.image(*r, path + ".repository")) {
      if (parse_image_ref(*s).has_tag_or_digest()) {
        c_.expected(*r, path + ".repository",
                    "a repository without a tag or digest, like "
                    "registry.example.com/ml/resnet50 (ktrain build pushes by digest)");
      } else {
        out.repository = *s;
      }
    }
  } else {
    c_.add(v.origin, path + ".repository",
           "missing; where to push, like registry.example.com/ml/resnet50");
  }
  if (const Value* x = field(v, "context")) {
    if (auto s = c_.scalar(*x, path + ".context", "a folder like . or ./src")) {
      std::filesystem::path ctx(*s);
      if (ctx.is_relative()) ctx = std::filesystem::path(directory_) / ctx;
      std::string norm = ctx.lexically_normal().string();
      while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
      out.context = norm;
    }
  }
  if (const Value* x = field(v, "ignore"))
    out.ignore = c_.strings(*x, path + ".ignore", "[\"data/\", \"*.ckpt\"]");
  if (const Value* x = field(v, "workdir"))
    if (auto s = c_.absolute_path(*x, path + ".workdir", "/workspace")) out.workdir = *s;
  if (const Value* x = field(v, "env")) out.env = c_.env(*x, path + ".env");
}

}  // namespace ktrain::project::detail
