#include "oci/blob_file.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../net/scripted_transport.h"
#include "base/error.h"

using namespace ktrain;
using namespace ktrain::oci;
using namespace ktrain::net::testing;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path root;
  Folder() {
    root = fs::temp_directory_path() / ("ktrain-blob-file-test-" + std::to_string(::getpid()) +
                                        "-" + std::to_string(std::rand()));
    fs::create_directories(root / "blobs" / "sha256");
  }
  ~Folder() { fs::remove_all(root); }
  fs::path blobs() const { return root / "blobs" / "sha256"; }
  /// The names in blobs/sha256.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(blobs())) out.push_back(e.path().filename());
    return out;
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class NoCredentials : public CredentialStore {
 public:
  Credentials lookup(const std::string&) override { return {}; }
};

}  // namespace

TEST_CASE("blob file: verified bytes take the blob's name; nothing else is left") {
  Folder f;
  const std::string data = "layer bytes";
  const std::string d = sha256_digest(data);
  const fs::path target = f.blobs() / digest_hex(d, "");
  {
    BlobFile out(target.string(), d, data.size());
    CHECK(fs::path(out.temp_path()).parent_path() == f.blobs());
    out.write("layer ");
    out.write("bytes");
    CHECK_FALSE(fs::exists(target));
    out.commit("test");
  }
  CHECK(read_all(target) == data);
  CHECK(f.names() == std::vector<std::string>{digest_hex(d, "")});
}

TEST_CASE("blob file: bytes that do not match their digest or size leave nothing") {
  Folder f;
  const std::string d = sha256_digest("the real layer");
  const fs::path target = f.blobs() / digest_hex(d, "");
  {
    BlobFile out(target.string(), d, 14);
    out.write("a forged layer");
    CHECK_THROWS_WITH_AS(
        out.commit("downloading blob " + d),
        doctest::Contains(
            ("downloading blob " + d + ": the content does not match its digest").c_str()),
        Error);
  }
  CHECK(f.names().empty());
  {
    BlobFile out(target.string(), d, 14);
    out.write("short");
    CHECK_THROWS_WITH_AS(out.commit("x"), doctest::Contains("5 bytes came, not the 14"), Error);
  }
  CHECK(f.names().empty());
  {
    BlobFile out(target.string(), d, 4);
    CHECK_THROWS_WITH_AS(out.write("the real layer"), doctest::Contains("more than the 4 bytes"),
                         Error);
  }
  CHECK(f.names().empty());
  {
    BlobFile out(target.string(), d,
                 14);  // never committed (an exception on the way)
    out.write("the real layer");
  }
  CHECK(f.names().empty());
}

TEST_CASE("blob file: a digest that is not sha256:<64 hex> makes no file") {
  Folder f;
  CHECK_THROWS_WITH_AS(BlobFile((f.blobs() / "x").string(), "sha256:../../x", 1),
                       doctest::Contains("'sha256:../../x' is not a sha256 digest"), Error);
  CHECK(f.names().empty());
}

TEST_CASE(
    "blob file: an existing target is replaced only by verified bytes, "
    "never followed") {
  Folder f;
  const std::string data = "verified";
  const std::string d = sha256_digest(data);
  const fs::path target = f.blobs() / digest_hex(d, "");
  const fs::path outside = f.root / "outside";
  std::ofstream(outside) << "keep me";
  fs::create_symlink(outside, target);
  {
    BlobFile out(target.string(), d, data.size());
    out.write("forged!!");
    CHECK_THROWS_AS(out.commit("x"), Error);
  }
  CHECK(fs::is_symlink(target));
  CHECK(read_all(outside) == "keep me");
  {
    BlobFile out(target.string(), d, data.size());
    out.write(data);
    out.commit("x");
  }
  CHECK_FALSE(fs::is_symlink(target));
  CHECK(read_all(target) == data);
  CHECK(read_all(outside) == "keep me");
}

TEST_CASE(
    "blob file: a download that does not match leaves nothing in "
    "blobs/sha256") {
  Folder f;
  ScriptedTransport t;
  NoCredentials creds;
  RegistryClient c(t, creds);
  const Repo repo{"127.0.0.1:5000", "base"};
  const std::string real = "the real layer";
  const std::string d = sha256_digest(real);
  const std::string target = (f.blobs() / digest_hex(d, "")).string();

  t.script = {canned(200, "a forged layer")};
  CHECK_THROWS_WITH_AS(download_blob_file(c, repo, d, real.size(), target),
                       doctest::Contains(("downloading blob " + d +
                                          " of 127.0.0.1:5000/base: the content does not match")
                                             .c_str()),
                       Error);
  CHECK(f.names().empty());

  // More bytes than the descriptor gives: the download stops, and nothing is
  // kept.
  t.script = {canned(200, real + real)};
  CHECK_THROWS_WITH_AS(download_blob_file(c, repo, d, real.size(), target),
                       doctest::Contains("more than the 14 bytes"), Error);
  CHECK(f.names().empty());

  t.script = {canned(200, real)};
  download_blob_file(c, repo, d, real.size(), target);
  CHECK(read_all(target) == real);
  CHECK(f.names().size() == 1);
  CHECK(t.seen.back().url == "http://127.0.0.1:5000/v2/base/blobs/" + d);
}

TEST_CASE(
    "blob file: download_blob refuses a digest that is not sha256:<64 "
    "hex> unfetched") {
  ScriptedTransport t;
  NoCredentials creds;
  RegistryClient c(t, creds);
  CHECK_THROWS_WITH_AS(c.get_blob({"127.0.0.1:5000", "base"}, "sha256:../../../x"),
                       doctest::Contains("'sha256:../../../x' is not a sha256 digest"), Error);
  CHECK(t.seen.empty());
  // A config larger than its descriptor says is not read to the end.
  const std::string config = R"({"os":"linux"})";
  t.script = {canned(200, config)};
  CHECK_THROWS_WITH_AS(c.get_blob({"127.0.0.1:5000", "base"}, sha256_digest(config), 3),
                       doctest::Contains("more than the 3 bytes"), Error);
}

TEST_CASE("blob file: copy_blob_file refuses a local blob changed on disk") {
  Folder f;
  const std::string data = "cached layer";
  const std::string d = sha256_digest(data);
  const fs::path from = f.root / "cached";
  std::ofstream(from, std::ios::binary) << "cached LAYER";  // same size, other bytes
  const std::string target = (f.blobs() / digest_hex(d, "")).string();
  CHECK_THROWS_WITH_AS(copy_blob_file(from.string(), d, data.size(), target),
                       doctest::Contains("does not match its digest"), Error);
  CHECK(f.names().empty());
  std::ofstream(from, std::ios::binary | std::ios::trunc) << data;
  copy_blob_file(from.string(), d, data.size(), target);
  CHECK(read_all(target) == data);
}
