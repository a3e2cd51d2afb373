#include "oci/registry.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "../net/scripted_transport.h"
#include "base/image_ref.h"
#include "oci/digest.h"

using namespace ktrain;
using namespace ktrain::oci;
using namespace ktrain::net::testing;

namespace {

class FixedCredentials : public CredentialStore {
 public:
  Credentials c;
  int lookups = 0;
  Credentials lookup(const std::string&) override {
    ++lookups;
    return c;
  }
};

std::string header(const net::Request& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

}  // namespace

TEST_CASE("registry: plain HTTP only for localhost or listed hosts") {
  ScriptedTransport t;
  FixedCredentials creds;
  RegistryClient c(t, creds, {{"registry.lan:5000"}, 0});
  CHECK(c.base_url("127.0.0.1:5000") == "http://127.0.0.1:5000");
  CHECK(c.base_url("localhost:5000") == "http://localhost:5000");
  CHECK(c.base_url("registry.lan:5000") == "http://registry.lan:5000");
  CHECK(c.base_url("ghcr.io") == "https://ghcr.io");
  CHECK(c.base_url("docker.io") == "https://registry-1.docker.io");
}

TEST_CASE("registry: the Bearer token flow from WWW-Authenticate, with Basic credentials") {
  ScriptedTransport t;
  FixedCredentials creds;
  creds.c = {"alice", "pw", "", "test"};
  t.script = {
      canned(
          401, "",
          {{"WWW-Authenticate",
            R"(Bearer realm="https://auth.test/token",service="reg.test",scope="repository:team/app:pull")"}}),
      canned(200, R"({"token":"T0K"})"),
      canned(200),  // the HEAD again, with the token
      canned(404),  // the next HEAD reuses the token without asking again
  };
  RegistryClient c(t, creds);
  Repo repo{"reg.test", "team/app"};
  CHECK(c.blob_exists(repo, "sha256:" + std::string(64, 'a')));
  CHECK_FALSE(c.blob_exists(repo, "sha256:" + std::string(64, 'b')));
  REQUIRE(t.seen.size() == 4);
  CHECK(t.seen[0].method == "HEAD");
  CHECK(header(t.seen[0], "Authorization").empty());
  CHECK(t.seen[1].url ==
        "https://auth.test/token?service=reg.test&scope=repository%3Ateam%2Fapp%3Apull%2Cpush");
  CHECK(header(t.seen[1], "Authorization") == "Basic YWxpY2U6cHc=");
  CHECK(header(t.seen[2], "Authorization") == "Bearer T0K");
  CHECK(header(t.seen[3], "Authorization") == "Bearer T0K");
}

TEST_CASE("registry: Basic auth challenge; refused credentials name their source, not the secret") {
  ScriptedTransport t;
  FixedCredentials creds;
  creds.c = {"bob", "hunter2", "", "/home/bob/.docker/config.json (auths)"};
  t.script = {
      canned(401, "", {{"WWW-Authenticate", R"(Basic realm="r")"}}),
      canned(401, R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})",
             {{"WWW-Authenticate", R"(Basic realm="r")"}})};
  RegistryClient c(t, creds);
  try {
    c.blob_exists({"127.0.0.1:5000", "app"}, "sha256:" + std::string(64, 'a'));
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(e.exit_status() == exit_code::kUnreachable);
    CHECK(m.find("401 Unauthorized") != std::string::npos);
    CHECK(m.find("config.json (auths)") != std::string::npos);
    CHECK(m.find("user 'bob'") != std::string::npos);
    CHECK(m.find("hunter2") == std::string::npos);
  }
  CHECK(header(t.seen.at(1), "Authorization") == "Basic Ym9iOmh1bnRlcjI=");
}

TEST_CASE("registry: a token service's malformed answer is described, the token never quoted") {
  const std::string challenge =
      R"(Bearer realm="https://u:pw@auth.test/token?access_token=abc",service="reg.test")";
  for (const std::string& body :
       {std::string(R"({"token":"eyJhbGciOi.s3cr3t)"),
        std::string(R"({"token":"eyJhbGciOi.s3cr3t"x)"), std::string(R"(eyJhbGciOi.s3cr3t)"),
        std::string(R"({"token":7})"), std::string(R"({"token":"eyJhbGciOi.s3cr3t
X-Injected: 1"})")}) {
    CAPTURE(body);
    ScriptedTransport t;
    FixedCredentials creds;
    t.script = {canned(401, "", {{"WWW-Authenticate", challenge}}), canned(200, body)};
    RegistryClient c(t, creds);
    try {
      c.blob_exists({"reg.test", "team/app"}, "sha256:" + std::string(64, 'a'));
      FAIL("expected an error");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(
          m.find("getting a token from https://REDACTED@auth.test/token?access_token=REDACTED: ") ==
          0);
      CHECK(m.find("s3cr3t") == std::string::npos);
      CHECK(m.find("eyJ") == std::string::npos);
      CHECK(m.find("pw@") == std::string::npos);
      CHECK(e.exit_status() == exit_code::kUnreachable);
    }
    CHECK(t.seen.size() == 2);  // nothing sent with a token
  }
}

TEST_CASE("registry: credentials go to a token service over HTTPS only") {
  const std::string digest = "sha256:" + std::string(64, 'a');
  auto challenge = [](const std::string& realm) {
    return canned(401, "", {{"WWW-Authenticate", "Bearer realm=\"" + realm + "\""}});
  };
  FixedCredentials creds;
  creds.c = {"alice", "pw", "", "~/.docker/config.json"};

  SUBCASE("a plain HTTP realm of an HTTPS registry: refused, nothing sent") {
    ScriptedTransport t;
    t.script = {challenge("http://auth.test/token")};
    RegistryClient c(t, creds);
    try {
      c.blob_exists({"reg.test", "team/app"}, digest);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) ==
            "not sending the credentials from ~/.docker/config.json for reg.test to the token "
            "service at http://auth.test/token: it is plain HTTP, not HTTPS "
            "(--insecure-registry reg.test allows it)");
      CHECK(e.exit_status() == exit_code::kUnreachable);
    }
    CHECK(t.seen.size() == 1);
  }
  SUBCASE("anonymous: a plain HTTP realm gets no credentials, so it may be asked") {
    ScriptedTransport t;
    FixedCredentials none;
    t.script = {challenge("http://auth.test/token"), canned(200, R"({"token":"T"})"), canned(200)};
    RegistryClient c(t, none);
    CHECK(c.blob_exists({"reg.test", "team/app"}, digest));
    REQUIRE(t.seen.size() == 3);
    CHECK(header(t.seen[1], "Authorization").empty());
  }
  SUBCASE("a registry given as insecure may use a plain HTTP realm") {
    ScriptedTransport t;
    t.script = {challenge("http://auth.lan/token"), canned(200, R"({"token":"T"})"), canned(200)};
    RegistryClient c(t, creds, {{"reg.lan:5000"}, 0});
    CHECK(c.blob_exists({"reg.lan:5000", "team/app"}, digest));
    REQUIRE(t.seen.size() == 3);
    CHECK(header(t.seen[1], "Authorization") == "Basic YWxpY2U6cHc=");
  }
  SUBCASE("a realm that is not http(s) is refused, credentials or not") {
    for (const char* realm : {"file:///etc/passwd", "ftp://auth.test/token", "auth.test/token"}) {
      CAPTURE(realm);
      ScriptedTransport t;
      FixedCredentials none;
      t.script = {challenge(realm)};
      RegistryClient c(t, none);
      CHECK_THROWS_WITH_AS(c.blob_exists({"reg.test", "team/app"}, digest),
                           doctest::Contains("which is not an http(s) URL"), Error);
      CHECK(t.seen.size() == 1);
    }
  }
}

TEST_CASE("registry: manifests and token answers are read with a size limit") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(401, "", {{"WWW-Authenticate", R"(Bearer realm="https://auth.test/t")"}}),
              canned(200, R"({"token":"T"})"), canned(404)};
  RegistryClient c(t, creds);
  CHECK_THROWS_AS(c.get_manifest(parse_image_ref("reg.test/team/app:1"), "linux/amd64"), Error);
  REQUIRE(t.seen.size() == 3);
  CHECK(t.seen[0].max_body_bytes == RegistryClient::kMaxManifestBytes);
  CHECK(t.seen[1].max_body_bytes == std::size_t{1} << 20);
  CHECK(RegistryClient::kMaxManifestBytes == std::size_t{4} << 20);
}

TEST_CASE("registry: an index resolves to the requested platform") {
  ScriptedTransport t;
  FixedCredentials creds;
  const std::string amd =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:c","size":1},"layers":[]})";
  const std::string index =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
    {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:arm","size":1,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}},
    {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
      sha256_digest(amd) + R"(","size":)" + std::to_string(amd.size()) +
      R"(,"platform":{"os":"linux","architecture":"amd64"}}]})";
  t.script = {canned(200, index, {{"Content-Type", "application/vnd.oci.image.index.v1+json"}}),
              canned(200, amd, {{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}})};
  RegistryClient c(t, creds);
  ManifestBytes m = c.get_manifest(parse_image_ref("ghcr.io/team/base:1"), "linux/amd64");
  CHECK(m.bytes == amd);
  CHECK(m.digest == sha256_digest(amd));
  CHECK(t.seen[0].url == "https://ghcr.io/v2/team/base/manifests/1");
  CHECK(t.seen[1].url == "https://ghcr.io/v2/team/base/manifests/" + sha256_digest(amd));

  t.script = {canned(200, index)};
  CHECK_THROWS_WITH_AS(c.get_manifest(parse_image_ref("ghcr.io/team/base:1"), "linux/s390x"),
                       doctest::Contains("linux/arm64/v8, linux/amd64"), Error);
}

namespace {

const char kAmd[] =
    R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:c","size":1},"layers":[]})";

/// An OCI index whose linux/amd64 entry has `digest` and `size`.
std::string index_of(const std::string& digest, std::size_t size) {
  return R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
    {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
         digest + R"(","size":)" + std::to_string(size) +
         R"(,"platform":{"os":"linux","architecture":"amd64"}}]})";
}

const net::Headers kIndexType = {{"Content-Type", "application/vnd.oci.image.index.v1+json"}};

}  // namespace

TEST_CASE("registry: the platform manifest of a pinned index is verified against the index") {
  ScriptedTransport t;
  FixedCredentials creds;
  RegistryClient c(t, creds);
  const std::string amd = kAmd;
  const std::string index = index_of(sha256_digest(amd), amd.size());
  const ImageRef pinned = parse_image_ref("ghcr.io/team/base@" + sha256_digest(index));
  // Another manifest of the same size in place of the one the index names.
  std::string forged = amd;
  forged.replace(forged.find("sha256:c"), 8, "sha256:d");
  REQUIRE(forged.size() == amd.size());
  t.script = {canned(200, index, kIndexType), canned(200, forged)};
  CHECK_THROWS_WITH_AS(c.get_manifest(pinned, "linux/amd64"),
                       doctest::Contains(("the registry sent a manifest whose digest is " +
                                          sha256_digest(forged) + ", not " + sha256_digest(amd) +
                                          " (which the index's entry for linux/amd64 names)")
                                             .c_str()),
                       Error);
  CHECK(t.seen.size() == 2);

  // The right bytes pass.
  t.script = {canned(200, index, kIndexType), canned(200, amd)};
  CHECK(c.get_manifest(pinned, "linux/amd64").bytes == amd);

  // An index by tag is checked the same way.
  t.script = {canned(200, index, kIndexType), canned(200, forged)};
  CHECK_THROWS_WITH_AS(c.get_manifest(parse_image_ref("ghcr.io/team/base:1"), "linux/amd64"),
                       doctest::Contains(("not " + sha256_digest(amd)).c_str()), Error);

  // The size that the index gives is checked too.
  const std::string longer = amd + " ";
  t.script = {canned(200, index_of(sha256_digest(longer), amd.size()), kIndexType),
              canned(200, longer)};
  CHECK_THROWS_WITH_AS(c.get_manifest(parse_image_ref("ghcr.io/team/base:1"), "linux/amd64"),
                       doctest::Contains(("bytes, not the " + std::to_string(amd.size())).c_str()),
                       Error);
}

TEST_CASE("registry: an index entry whose digest is not sha256:<64 hex> is refused unfetched") {
  ScriptedTransport t;
  FixedCredentials creds;
  RegistryClient c(t, creds);
  for (const std::string& bad : std::vector<std::string>{
           "sha256:../../../../etc/passwd" + std::string(42, '/'), "sha256:" + std::string(64, 'F'),
           "sha512:" + std::string(128, 'a'), std::string("sha256:abc")}) {
    t.seen.clear();
    t.script = {canned(200, index_of(bad, 10), kIndexType)};
    try {
      c.get_manifest(parse_image_ref("ghcr.io/team/base:1"), "linux/amd64");
      FAIL("expected an error for " << bad);
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("the index's entry for linux/amd64: ") != std::string::npos);
      CHECK(m.find(bad.substr(0, 40)) != std::string::npos);
    }
    CHECK(t.seen.size() == 1);  // the index only; never the entry
  }
}

TEST_CASE("registry: a base pinned by a sha512 digest is refused as a usage error, unfetched") {
  ScriptedTransport t;
  FixedCredentials creds;
  RegistryClient c(t, creds);
  const std::string d = "sha512:" + std::string(128, 'a');
  try {
    c.get_manifest(parse_image_ref("ghcr.io/team/base@" + d), "linux/amd64");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_status() == exit_code::kUsage);
    CHECK(std::string(e.what()).find(
              "'" + d + "' uses sha512: only sha256 digests are supported") != std::string::npos);
  }
  CHECK(t.seen.empty());
}

TEST_CASE("registry: an unknown image is a clear error") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {
      canned(404, R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]})")};
  RegistryClient c(t, creds);
  CHECK_THROWS_WITH_AS(c.get_manifest(parse_image_ref("127.0.0.1:5000/nope:1"), "linux/amd64"),
                       doctest::Contains("does not exist"), Error);
}

TEST_CASE("registry: monolithic upload is POST then PUT ?digest= with the bytes") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(202, "", {{"Location", "/v2/app/blobs/uploads/u1?_state=s"}}), canned(201)};
  RegistryClient c(t, creds);
  const std::string data = "layer bytes";
  const std::string digest = sha256_digest(data);
  c.upload_blob({"127.0.0.1:5000", "app"}, digest, data.size(),
                [&](std::uint64_t off, char* buf, std::size_t len) {
                  std::size_t n = std::min(len, data.size() - static_cast<std::size_t>(off));
                  std::copy_n(data.data() + off, n, buf);
                  return n;
                });
  REQUIRE(t.seen.size() == 2);
  CHECK(t.seen[0].method == "POST");
  CHECK(t.seen[0].url == "http://127.0.0.1:5000/v2/app/blobs/uploads/");
  CHECK(t.seen[1].method == "PUT");
  CHECK(t.seen[1].url == "http://127.0.0.1:5000/v2/app/blobs/uploads/u1?_state=s&digest=sha256%3A" +
                             digest.substr(7));
  CHECK(t.seen[1].body_length == static_cast<std::int64_t>(data.size()));
  CHECK(c.bytes_uploaded() == data.size());
}

TEST_CASE("registry: chunked upload sends PATCH with Content-Range, then PUT") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(202, "", {{"Location", "http://127.0.0.1:5000/up/1"}}),
              canned(202, "", {{"Location", "http://127.0.0.1:5000/up/2"}}),
              canned(202, "", {{"Location", "http://127.0.0.1:5000/up/3"}}), canned(201)};
  RegistryClient c(t, creds, {{}, 6});
  const std::string data = "0123456789";
  c.upload_blob({"127.0.0.1:5000", "app"}, sha256_digest(data), data.size(),
                [&](std::uint64_t off, char* buf, std::size_t len) {
                  std::size_t n = std::min(len, data.size() - static_cast<std::size_t>(off));
                  std::copy_n(data.data() + off, n, buf);
                  return n;
                });
  REQUIRE(t.seen.size() == 4);
  CHECK(t.seen[1].method == "PATCH");
  CHECK(header(t.seen[1], "Content-Range") == "0-5");
  CHECK(t.seen[2].url == "http://127.0.0.1:5000/up/2");
  CHECK(header(t.seen[2], "Content-Range") == "6-9");
  CHECK(t.seen[3].url.rfind("http://127.0.0.1:5000/up/3?digest=", 0) == 0);
  CHECK(t.seen[3].body_length == 0);
}

TEST_CASE("registry: cross-repository mount") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(201), canned(202, "", {{"Location", "/x"}})};
  RegistryClient c(t, creds);
  const std::string d = "sha256:" + std::string(64, 'e');
  CHECK(c.mount_blob({"127.0.0.1:5000", "team/app"}, d, "library/base"));
  CHECK_FALSE(c.mount_blob({"127.0.0.1:5000", "team/app"}, d, "library/base"));
  CHECK(t.seen[0].url == "http://127.0.0.1:5000/v2/team/app/blobs/uploads/?mount=sha256%3A" +
                             std::string(64, 'e') + "&from=library%2Fbase");
}

TEST_CASE("registry: parse_challenge") {
  auto [scheme, p] =
      parse_challenge(R"(Bearer realm="https://a/token",service="svc",scope="repository:x:pull")");
  CHECK(scheme == "bearer");
  CHECK(p["realm"] == "https://a/token");
  CHECK(p["service"] == "svc");
  CHECK(p["scope"] == "repository:x:pull");
}

TEST_CASE("registry: a blob streamed while it is made goes as the body of one PATCH") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(202, "", {{"Location", "/v2/app/blobs/uploads/u1"}}),
              canned(202, "", {{"Location", "/v2/app/blobs/uploads/u2"}}), canned(201)};
  RegistryClient c(t, creds);
  const std::string data = "0123456789abcdefghij";
  {
    BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 8);
    s.write(data.substr(0, 3));
    s.write(data.substr(3, 12));
    s.write("");
    s.write(data.substr(15));
    CHECK(s.size() == data.size());
    REQUIRE(s.finish(sha256_digest(data)));
    CHECK(s.error().empty());
  }
  REQUIRE(t.seen.size() == 3);
  CHECK(t.seen[0].method == "POST");
  CHECK(t.seen[1].method == "PATCH");
  CHECK(t.seen[1].url == "http://127.0.0.1:5000/v2/app/blobs/uploads/u1");
  CHECK(t.seen[1].body_length == -1);  // streamed: chunked on HTTP/1.1
  CHECK(header(t.seen[1], "Content-Range").empty());
  CHECK(t.bodies[1] == data);
  CHECK(t.seen[2].method == "PUT");
  CHECK(t.seen[2].url == "http://127.0.0.1:5000/v2/app/blobs/uploads/u2?digest=sha256%3A" +
                             sha256_digest(data).substr(7));
  CHECK(t.bodies[2].empty());
  CHECK(c.bytes_uploaded() == data.size());
}

namespace {

/// Opens sessions and answers PATCHes like a registry, but reads a PATCH's body only
/// once `open()` is called, and then at most `read_limit` bytes of it.
class GatedRegistry : public net::HttpTransport {
 public:
  std::size_t read_limit = SIZE_MAX;
  std::string body;
  std::vector<std::string> methods;

  void open() {
    std::lock_guard<std::mutex> g(mu_);
    open_ = true;
    cv_.notify_all();
  }
  net::Response perform(const net::Request& req) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      methods.push_back(req.method);
    }
    if (req.method == "POST") return canned(202, "", {{"Location", "/v2/app/blobs/uploads/u1"}});
    if (req.method == "PATCH") {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return open_; });
      char buf[3];
      for (std::size_t n;
           body.size() < read_limit &&
           (n = req.body_reader(body.size(), buf, std::min(sizeof buf, read_limit - body.size()))) >
               0;) {
        body.append(buf, n);
      }
      return canned(202, "", {{"Location", "/v2/app/blobs/uploads/u2"}});
    }
    if (req.method == "PUT") return canned(201);
    return canned(204);
  }
  std::vector<net::Response> perform_all(const std::vector<net::Request>& reqs) override {
    std::vector<net::Response> out;
    for (const auto& r : reqs) out.push_back(perform(r));
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace

TEST_CASE("registry: a stream holds at most its buffer while the registry does not read") {
  GatedRegistry t;
  FixedCredentials creds;
  RegistryClient c(t, creds);
  BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 8);
  s.write("01234567");  // fills the buffer
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    s.write("89");  // waits for room
    wrote = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(wrote.load());
  t.open();
  writer.join();
  CHECK(wrote.load());
  REQUIRE(s.finish(sha256_digest("0123456789")));
  CHECK(t.body == "0123456789");
  CHECK(t.methods == std::vector<std::string>{"POST", "PATCH", "PUT"});
}

TEST_CASE("registry: a registry that answers before the whole blob was read fails the stream") {
  GatedRegistry t;
  t.read_limit = 5;
  t.open();
  FixedCredentials creds;
  RegistryClient c(t, creds);
  {
    BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 4);
    // The writes do not hang once nothing reads them: they are dropped.
    for (int i = 0; i < 10; ++i) s.write("abcd");
    CHECK_FALSE(s.finish(sha256_digest(std::string(40, 'x'))));
    CHECK(s.error().find("before the whole blob was sent") != std::string::npos);
  }
  CHECK(t.body == "abcda");
  // No PUT: the session is abandoned.
  CHECK(t.methods == std::vector<std::string>{"POST", "PATCH", "DELETE"});
}

TEST_CASE("registry: a refused PATCH stops the stream; the session is abandoned, not thrown") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(202, "", {{"Location", "/v2/app/blobs/uploads/u1"}}),
              canned(416, R"({"errors":[{"code":"BLOB_UPLOAD_INVALID","message":"bad range"}]})"),
              canned(204)};
  RegistryClient c(t, creds);
  {
    BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 4);
    s.write("abcdefgh");
    CHECK_FALSE(s.finish(sha256_digest("abcdefgh")));
    CHECK(s.error().find("bad range") != std::string::npos);
    CHECK(s.error().find("PATCH") != std::string::npos);
    s.write("ijkl");  // dropped
    CHECK(s.size() == 8);
  }
  REQUIRE(t.seen.size() == 3);
  CHECK(t.seen[1].method == "PATCH");
  CHECK(t.seen[2].method == "DELETE");  // abandoned when the stream went away
  CHECK(t.seen[2].url == "http://127.0.0.1:5000/v2/app/blobs/uploads/u1");
}

TEST_CASE("registry: a streamed body asked for again (an auth retry) fails the stream") {
  ScriptedTransport t;
  FixedCredentials creds;
  creds.c = {"alice", "pw", "", "test"};
  t.script = {canned(202, "", {{"Location", "/v2/app/blobs/uploads/u1"}}),
              canned(401, "", {{"WWW-Authenticate", R"(Basic realm="reg")"}}),
              canned(202, "", {{"Location", "/v2/app/blobs/uploads/u2"}}), canned(204)};
  RegistryClient c(t, creds);
  {
    BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 64);
    s.write("abcdefgh");
    CHECK_FALSE(s.finish(sha256_digest("abcdefgh")));
    CHECK(s.error().find("asked for the streamed body again") != std::string::npos);
  }
  REQUIRE(t.seen.size() == 4);
  CHECK(t.bodies[1] == "abcdefgh");
  CHECK(t.seen[2].method == "PATCH");
  CHECK(t.bodies[2].empty());  // nothing of the blob a second time
  CHECK(t.seen[3].method == "DELETE");
}

TEST_CASE("registry: a stream that cannot open a session fails quietly") {
  ScriptedTransport t;
  FixedCredentials creds;
  t.script = {canned(403, R"({"errors":[{"code":"DENIED","message":"no push"}]})")};
  RegistryClient c(t, creds);
  BlobUploadStream s(c, {"127.0.0.1:5000", "app"}, 4);
  for (int i = 0; i < 8; ++i) s.write("abcdefgh");  // never waits for a sender that is gone
  CHECK_FALSE(s.finish(sha256_digest("abcdefgh")));
  CHECK(s.error().find("no push") != std::string::npos);
  CHECK(t.seen.size() == 1);  // nothing sent after the refusal
}

TEST_CASE("registry: manifests with fields of the wrong type are errors, not JSON crashes") {
  // Found by tests/fuzz (registry): nlohmann's value() threw type_error for these.
  ScriptedTransport t;
  FixedCredentials creds;
  RegistryClient c(t, creds);
  const auto ref = parse_image_ref("ghcr.io/team/base:1");
  const net::Headers index_type = {{"Content-Type", "application/vnd.oci.image.index.v1+json"}};
  // An "index" that is a number, and one whose platforms name their os with a number.
  t.script = {canned(200, "5", index_type)};
  CHECK_THROWS_WITH_AS(c.get_manifest(ref, "linux/amd64"),
                       doctest::Contains("no manifest for platform linux/amd64"), Error);
  t.script = {canned(200, R"({"manifests":[{"digest":"sha256:x","platform":{"os":1}}]})")};
  CHECK_THROWS_WITH_AS(c.get_manifest(ref, "linux/amd64"),
                       doctest::Contains("(the image has: ?/?)"), Error);
  // A manifest whose schemaVersion is a string, or that is not an object at all.
  for (const std::string body : {R"({"schemaVersion":"2","config":{}})", "[1, 2]"}) {
    t.script = {canned(200, body)};
    CHECK_THROWS_WITH_AS(c.get_manifest(ref, "linux/amd64"),
                         doctest::Contains("unsupported manifest type"), Error);
  }
}
