#include "oci/credentials.h"

#include <doctest/doctest.h>

#include <map>

#include "base/error.h"

using namespace ktrain;
using namespace ktrain::oci;

namespace {

class MemFs : public FileSystem {
 public:
  std::map<std::string, std::string> files;
  std::string read_file(const std::string& p) override { return files.at(p); }
  void write_file(const std::string& p, const std::string& c) override { files[p] = c; }
  bool exists(const std::string& p) override { return files.count(p) > 0; }
  bool is_directory(const std::string&) override { return false; }
};

struct Fixture {
  MemFs fs;
  Env env;
  std::vector<std::vector<std::string>> runs;
  std::vector<std::string> inputs;
  Fixture() {
    env.fs = &fs;
    env.vars["HOME"] = "/home/u";
  }
  HelperRunner runner() {
    return [this](const std::vector<std::string>& argv, const std::string& input) {
      runs.push_back(argv);
      inputs.push_back(input);
      if (argv[0] == "docker-credential-none") return std::make_pair(1, std::string("not found"));
      return std::make_pair(0,
                            std::string(R"({"Username":"helper-user","Secret":"helper-secret"})"));
    };
  }
};

}  // namespace

TEST_CASE("credentials: no config file means anonymous") {
  Fixture f;
  DockerConfigCredentials c(f.env, f.runner());
  CHECK(c.lookup("ghcr.io").anonymous());
}

TEST_CASE("credentials: auths with base64 user:password, docker.io under its index URL") {
  Fixture f;
  f.fs.files["/home/u/.docker/config.json"] =
      R"({"auths":{"ghcr.io":{"auth":")" + base64_encode("me:pa:ss") +
      R"("},"https://index.docker.io/v1/":{"auth":")" + base64_encode("hub:pw") + R"("}}})";
  DockerConfigCredentials c(f.env, f.runner());
  Credentials g = c.lookup("ghcr.io");
  CHECK(g.username == "me");
  CHECK(g.password == "pa:ss");
  CHECK(g.source == "/home/u/.docker/config.json (auths)");
  CHECK(c.lookup("docker.io").username == "hub");
  CHECK(c.lookup("quay.io").anonymous());
}

TEST_CASE("credentials: DOCKER_CONFIG, credHelpers before credsStore") {
  Fixture f;
  f.env.vars["DOCKER_CONFIG"] = "/cfg";
  f.fs.files["/cfg/config.json"] =
      R"({"credHelpers":{"123.dkr.ecr.test":"ecr-login"},"credsStore":"none"})";
  DockerConfigCredentials c(f.env, f.runner());
  Credentials e = c.lookup("123.dkr.ecr.test");
  CHECK(e.username == "helper-user");
  CHECK(e.password == "helper-secret");
  CHECK(e.source == "docker-credential-ecr-login");
  REQUIRE(f.runs.size() == 1);
  CHECK(f.runs[0] == std::vector<std::string>{"docker-credential-ecr-login", "get"});
  CHECK(f.inputs[0] == "123.dkr.ecr.test\n");
  // The store has nothing for this one: anonymous.
  CHECK(c.lookup("other.test").anonymous());
  CHECK(f.runs.back()[0] == "docker-credential-none");
}

TEST_CASE("credentials: a bad auth value is an error that does not print it") {
  Fixture f;
  f.fs.files["/home/u/.docker/config.json"] = R"({"auths":{"r.test":{"auth":"@@@"}}})";
  DockerConfigCredentials c(f.env, f.runner());
  CHECK_THROWS_WITH_AS(c.lookup("r.test"), doctest::Contains("not valid base64"), Error);
}

TEST_CASE("credentials: a malformed config.json is an error that says where, never what") {
  const std::string secret = base64_encode("me:s3cr3t-pw");
  Fixture f;
  DockerConfigCredentials c(f.env, f.runner());
  // A quote left open, a value cut short, a stray byte after a secret: nlohmann's own
  // messages quote the bytes it read ("last read: '...'"), the secret among them.
  const std::vector<std::string> texts = {R"({"auths":{"r.test":{"auth":")" + secret + "}}}",
                                          R"({"auths":{"r.test":{"auth":")" + secret + "\n\"}}}",
                                          R"({"auths":{"r.test":{"auth":)" + secret + "}}}",
                                          R"({"auths":{"r.test":{"password":"s3cr3t-pw"})"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    f.fs.files["/home/u/.docker/config.json"] = text;
    try {
      c.lookup("r.test");
      FAIL("expected an error");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("/home/u/.docker/config.json: not valid JSON: parse error at line ") == 0);
      CHECK(m.find(secret) == std::string::npos);
      CHECK(m.find(secret.substr(0, 6)) == std::string::npos);
      CHECK(m.find("s3cr3t") == std::string::npos);
      CHECK(m.find("last read") == std::string::npos);
      CHECK(e.exit_status() == exit_code::kUnreachable);
    }
  }
}

TEST_CASE("credentials: base64 round trip") {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "user:p@ss"})
    CHECK(base64_decode(base64_encode(s)) == s);
  CHECK(base64_encode("alice:pw") == "YWxpY2U6cHc=");
}

TEST_CASE("credentials: a credHelpers entry that is not a string is an error, not a JSON crash") {
  // Found by tests/fuzz (docker_config).
  Fixture f;
  f.fs.files["/home/u/.docker/config.json"] = R"({"credHelpers":{"r.test":5}})";
  DockerConfigCredentials c(f.env, f.runner());
  CHECK_THROWS_WITH_AS(c.lookup("r.test"),
                       "/home/u/.docker/config.json: credHelpers.r.test is not the name of a "
                       "credential helper",
                       Error);
  CHECK(f.runs.empty());
}
