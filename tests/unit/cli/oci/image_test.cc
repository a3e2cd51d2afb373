#include "oci/image.h"

#include <doctest/doctest.h>

#include "base/error.h"
#include "oci/digest.h"

using namespace ktrain::oci;

namespace {

const char kBaseManifest[] =
    R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
 "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:c","size":2},
 "layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","digest":"sha256:base1","size":100}]})";
const char kBaseConfig[] =
    R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin","LANG=C"],"Cmd":["sh"]},
 "rootfs":{"type":"layers","diff_ids":["sha256:d1"]},"history":[{"created_by":"base"}]})";

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
  Image base = image_from_manifest(kBaseManifest, kBaseConfig);
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
  Image base = image_from_manifest(kBaseManifest, kBaseConfig);
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
