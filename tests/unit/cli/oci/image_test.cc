#include "oci/image.h"

#include <doctest/doctest.h>

#include "base/error.h"
#include "oci/digest.h"

using namespace ktrain::oci;

namespace {

const char kBaseConfig[] =
    R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin","LANG=C"],"Cmd":["sh"]},
 "rootfs":{"type":"layers","diff_ids":["sha256:d1"]},"history":[{"created_by":"base"}]})";

/// A Docker schema 2 manifest of kBaseConfig with one layer whose digest is `layer`.
std::string base_manifest(const std::string& layer = sha256_digest("base1"),
                          const std::string& config = sha256_digest(kBaseConfig)) {
  return R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
 "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":")" +
         config + R"(","size":2},
 "layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","digest":")" +
         layer + R"(","size":100}]})";
}

NewLayer layer(const std::string& name) {
  LayerBlob b;
  b.media_type = layer_media_type(Compression::kGzip);
  b.digest = sha256_digest(name);
  b.diff_id = sha256_digest("tar " + name);
  b.size = 10;
  b.path = "/tmp/" + name;
  return {b, "COPY " + name};
}

}  // namespace

TEST_CASE("image: append adds layers, diff_ids, history and config changes, keeping the base") {
  Image base = image_from_manifest(base_manifest(), kBaseConfig);
  REQUIRE(base.layers.size() == 1);
  CHECK(base.layers[0].desc.media_type == "application/vnd.oci.image.layer.v1.tar+gzip");
  CHECK(base.layers[0].local_path.empty());

  ConfigChanges ch;
  ch.entrypoint = {"/opt/ktrain/bin/ktrain-launch"};
  ch.working_dir = "/workspace";
  ch.env = {{"LANG", "C.UTF-8"}, {"GREETING", "hi"}};
  ch.labels = {{"org.opencontainers.image.revision", "abc"}};
  ch.created = rfc3339(1700000000);
  Image img = append(base, {layer("launcher"), layer("workspace")}, ch);

  CHECK(base.layers.size() == 1);  // the base is a value: unchanged
  REQUIRE(img.layers.size() == 3);
  CHECK(img.layers[2].local_path == "/tmp/workspace");
  const auto& c = img.config;
  CHECK(c["rootfs"]["diff_ids"].size() == 3);
  CHECK(c["rootfs"]["diff_ids"][2] == sha256_digest("tar workspace"));
  CHECK(c["history"].size() == 3);
  CHECK(c["history"][2]["created_by"] == "COPY workspace");
  CHECK(c["created"] == "2023-11-14T22:13:20Z");
  CHECK(c["config"]["Entrypoint"][0] == "/opt/ktrain/bin/ktrain-launch");
  CHECK_FALSE(c["config"].contains("Cmd"));
  CHECK(c["config"]["WorkingDir"] == "/workspace");
  CHECK(c["config"]["Env"] == nlohmann::ordered_json({"PATH=/bin", "LANG=C.UTF-8", "GREETING=hi"}));
  CHECK(c["config"]["Labels"]["org.opencontainers.image.revision"] == "abc");
  CHECK(c["architecture"] == "amd64");

  auto m = nlohmann::json::parse(img.manifest_bytes());
  CHECK(m["mediaType"] == media::kOciManifest);
  CHECK(m["config"]["mediaType"] == media::kOciConfig);
  CHECK(m["config"]["digest"] == sha256_digest(img.config_bytes()));
  CHECK(m["layers"].size() == 3);
  CHECK(img.digest() == sha256_digest(img.manifest_bytes()));
}

TEST_CASE("image: the same inputs give the same digest; a changed layer changes it") {
  Image base = image_from_manifest(base_manifest(), kBaseConfig);
  ConfigChanges ch;
  ch.entrypoint = {"/e"};
  std::string a = append(base, {layer("w")}, ch).digest();
  CHECK(a == append(base, {layer("w")}, ch).digest());
  CHECK(a != append(base, {layer("w2")}, ch).digest());
}

TEST_CASE("image: a malformed base manifest is a clear error") {
  CHECK_THROWS_WITH_AS(image_from_manifest("{}", kBaseConfig), doctest::Contains("not valid"),
                       ktrain::Error);
}

TEST_CASE("image: a base layer digest that is not sha256:<64 hex> is refused, named") {
  // A digest becomes a file name (--oci-layout, copies between registries): '../' in it
  // must never get that far.
  const std::string up = "../../../../../../../../";
  const std::string traversal =
      "sha256:" + up + std::string(64 - up.size() - 16, '/') + "tmp/ktrain-pwned";
  REQUIRE(traversal.size() == 71);
  CHECK_THROWS_WITH_AS(
      image_from_manifest(base_manifest(traversal), kBaseConfig),
      doctest::Contains(("layer 1: '" + traversal + "' is not a sha256 digest").c_str()),
      ktrain::Error);
  CHECK_THROWS_WITH_AS(
      image_from_manifest(base_manifest("sha256:" + std::string(64, 'A')), kBaseConfig),
      doctest::Contains("is not a sha256 digest"), ktrain::Error);
  const std::string sha512 = "sha512:" + std::string(128, 'a');
  CHECK_THROWS_WITH_AS(image_from_manifest(base_manifest(sha512), kBaseConfig),
                       doctest::Contains("uses sha512: only sha256 digests are supported"),
                       ktrain::Error);
}

TEST_CASE("image: config bytes that do not match the manifest's config digest are refused") {
  const std::string other = sha256_digest("another config");
  CHECK_THROWS_WITH_AS(
      image_from_manifest(base_manifest(sha256_digest("base1"), other), kBaseConfig),
      doctest::Contains(("does not match its digest " + other).c_str()), ktrain::Error);
  CHECK_THROWS_WITH_AS(
      image_from_manifest(base_manifest(sha256_digest("base1"), "sha256:c"), kBaseConfig),
      doctest::Contains("the config: 'sha256:c' is not a sha256 digest"), ktrain::Error);
}
