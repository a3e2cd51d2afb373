#include "net/log.h"

#include <doctest/doctest.h>

#include <future>
#include <sstream>

#include "scripted_transport.h"

using namespace ktrain::net;
using namespace ktrain::net::testing;

TEST_CASE("log: method, URL, status, duration and HTTP version") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(404)};
  std::ostringstream out;
  LoggingTransport t(inner, out, clock, 1);
  Request r;
  r.url = "https://registry.test/v2/lib/app/manifests/v1";
  t.perform(r);
  CHECK(out.str() ==
        "I GET https://registry.test/v2/lib/app/manifests/v1 404 Not Found 0ms (HTTP/1.1)\n");
}

TEST_CASE("log: a started request is logged when it ends, and its answer passed on") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(200, "body")};
  std::ostringstream out;
  LoggingTransport t(inner, out, clock, 1);
  Request r;
  r.url = "https://api.test/api/v1/namespaces/ml/pods/p/log?follow=true&token=s3cr3t";
  std::promise<Response> answer;
  t.start(r, [&answer](Response resp) { answer.set_value(std::move(resp)); });
  auto got = answer.get_future();
  REQUIRE(got.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const Response resp = got.get();
  CHECK(resp.status == 200);
  CHECK(resp.body == "body");
  CHECK(out.str() ==
        "I GET https://api.test/api/v1/namespaces/ml/pods/p/log?follow=true&token=REDACTED 200 OK "
        "0ms (HTTP/1.1)\n");
}

TEST_CASE("log: credentials never reach the log") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(200, "", {{"Set-Cookie", "sid=s3cr3t-cookie"}})};
  std::ostringstream out;
  LoggingTransport t(inner, out, clock, 2);
  Request r;
  r.url = "https://user:hunter2@auth.test/token?service=reg&access_token=tok123&scope=x";
  r.headers = {{"Authorization", "Bearer abc.def.ghi"}, {"Accept", "application/json"}};
  t.perform(r);
  const std::string log = out.str();
  CHECK(log.find("hunter2") == std::string::npos);
  CHECK(log.find("tok123") == std::string::npos);
  CHECK(log.find("abc.def.ghi") == std::string::npos);
  CHECK(log.find("s3cr3t-cookie") == std::string::npos);
  CHECK(log.find("access_token=REDACTED") != std::string::npos);
  CHECK(log.find("service=reg") != std::string::npos);
  CHECK(log.find("Authorization: REDACTED") != std::string::npos);
  CHECK(log.find("Accept: application/json") != std::string::npos);
}

TEST_CASE("log: log_label replaces the URL") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(200)};
  std::ostringstream out;
  LoggingTransport t(inner, out, clock, 1);
  Request r;
  r.url = "https://x.test/secret/path";
  r.log_label = "https://x.test/<redacted>";
  t.perform(r);
  CHECK(out.str().find("secret") == std::string::npos);
}

TEST_CASE("log: a failure below HTTP is described") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {failed(TransportFailure::kConnect, "Connection refused")};
  std::ostringstream out;
  LoggingTransport t(inner, out, clock, 1);
  Request r;
  r.url = "http://127.0.0.1:1/v2/";
  t.perform(r);
  CHECK(out.str().find("cannot connect to 127.0.0.1:1") != std::string::npos);
}

TEST_CASE("redact_url: keeps harmless parameters and removes secrets") {
  CHECK(redact_url("https://r.test/v2/a/blobs/uploads/?mount=sha256:1&from=b") ==
        "https://r.test/v2/a/blobs/uploads/?mount=sha256:1&from=b");
  CHECK(redact_url("https://s3.test/o?X-Amz-Signature=abc&X-Amz-Credential=k&x=1") ==
        "https://s3.test/o?X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED&x=1");
  CHECK(redact_url("https://a:b@h.test/p") == "https://REDACTED@h.test/p");
  CHECK(redact_url("https://h.test/p") == "https://h.test/p");
}

TEST_CASE("is_idempotent: by method unless the request says otherwise") {
  Request r;
  for (const char* m : {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}) {
    r.method = m;
    CHECK(is_idempotent(r));
  }
  for (const char* m : {"POST", "PATCH"}) {
    r.method = m;
    CHECK_FALSE(is_idempotent(r));
  }
  r.idempotent = true;
  CHECK(is_idempotent(r));
}
