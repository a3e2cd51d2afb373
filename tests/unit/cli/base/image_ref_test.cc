#include "base/image_ref.h"

#include <doctest/doctest.h>

#include "base/error.h"

using ktrain::image_ref_problem;
using ktrain::parse_image_ref;

TEST_CASE("image_ref: a bare name is a Docker Hub library image") {
  auto r = parse_image_ref("ubuntu");
  CHECK(r.registry == "docker.io");
  CHECK(r.repository == "library/ubuntu");
  CHECK(r.tag.empty());
  CHECK_FALSE(r.has_tag_or_digest());
  CHECK(r.str() == "docker.io/library/ubuntu");
}

TEST_CASE("image_ref: registry with port, nested path, tag and digest") {
  const std::string digest =
      "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  auto r = parse_image_ref("registry.example.com:5000/team/sub/app:v1.2-rc_3@" + digest);
  CHECK(r.registry == "registry.example.com:5000");
  CHECK(r.repository == "team/sub/app");
  CHECK(r.tag == "v1.2-rc_3");
  CHECK(r.digest == digest);
  CHECK(r.has_tag_or_digest());
  CHECK(r.str() == "registry.example.com:5000/team/sub/app:v1.2-rc_3@" + digest);
  CHECK(r.name() == "registry.example.com:5000/team/sub/app");
}

TEST_CASE("image_ref: localhost and a first component with '.' or ':' name a registry") {
  CHECK(parse_image_ref("localhost/app").registry == "localhost");
  CHECK(parse_image_ref("localhost:5000/app:v1").registry == "localhost:5000");
  CHECK(parse_image_ref("nvcr.io/nvidia/pytorch:24.08-py3").registry == "nvcr.io");
  auto hub = parse_image_ref("team/app:v1");
  CHECK(hub.registry == "docker.io");
  CHECK(hub.repository == "team/app");
  CHECK(parse_image_ref("index.docker.io/library/busybox").registry == "docker.io");
}

TEST_CASE("image_ref: separators in path components") {
  CHECK(image_ref_problem("a/b__c/d-e--f/g.h_i").empty());
  CHECK_FALSE(image_ref_problem("a/b___c").empty());
  CHECK_FALSE(image_ref_problem("a/-b").empty());
  CHECK_FALSE(image_ref_problem("a/b.").empty());
  CHECK_FALSE(image_ref_problem("a//b").empty());
}

TEST_CASE("image_ref: invalid references throw a UsageError with a valid example") {
  for (const char* bad : {"", "UPPER/app", "app:", "app:-bad", "app@sha256:short", "a b",
                          "registry.example.com/", ":v1", "reg_istry.com/app"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_image_ref(bad), ktrain::UsageError);
  }
  try {
    parse_image_ref("My/App");
    FAIL("expected an error");
  } catch (const ktrain::UsageError& e) {
    CHECK(std::string(e.what()).find("like registry.example.com/team/app:v1") != std::string::npos);
    CHECK(e.exit_status() == 2);
  }
}

TEST_CASE("image_ref: tags are at most 128 characters") {
  CHECK(image_ref_problem("app:" + std::string(128, 'a')).empty());
  CHECK_FALSE(image_ref_problem("app:" + std::string(129, 'a')).empty());
}
