#include "net/retry.h"

#include <doctest/doctest.h>

#include "scripted_transport.h"

using namespace ktrain::net;
using namespace ktrain::net::testing;
using namespace std::chrono_literals;

namespace {

Request get(std::string url = "https://registry.test/v2/") {
  Request r;
  r.url = std::move(url);
  return r;
}

}  // namespace

TEST_CASE("retry: 429 then success is retried and returns the success") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(429), canned(200, "ok")};
  RetryingTransport t(inner, clock, {}, 1);
  Response r = t.perform(get());
  CHECK(r.status == 200);
  CHECK(r.body == "ok");
  CHECK(inner.seen.size() == 2);
  REQUIRE(clock.sleeps.size() == 1);
  // base 250ms with equal jitter: between 125ms and 250ms.
  CHECK(clock.sleeps[0] >= 125ms);
  CHECK(clock.sleeps[0] <= 250ms);
}

TEST_CASE("retry: 503 then success; the backoff doubles") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(503), canned(503), canned(503), canned(200)};
  RetryingTransport t(inner, clock, {}, 7);
  CHECK(t.perform(get()).status == 200);
  REQUIRE(clock.sleeps.size() == 3);
  CHECK(clock.sleeps[1] >= 250ms);
  CHECK(clock.sleeps[1] <= 500ms);
  CHECK(clock.sleeps[2] >= 500ms);
  CHECK(clock.sleeps[2] <= 1000ms);
}

TEST_CASE("retry: a dropped connection is retried for GET") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {failed(TransportFailure::kDropped), canned(200)};
  RetryingTransport t(inner, clock, {}, 1);
  CHECK(t.perform(get()).status == 200);
  CHECK(inner.seen.size() == 2);
}

TEST_CASE("retry: a POST is not retried") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(503), canned(200)};
  RetryingTransport t(inner, clock, {}, 1);
  Request r = get();
  r.method = "POST";
  CHECK(t.perform(r).status == 503);
  CHECK(inner.seen.size() == 1);
  CHECK(clock.sleeps.empty());
}

TEST_CASE("retry: a POST marked idempotent is retried; a PATCH is not") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(503), canned(201), canned(502), canned(200)};
  RetryingTransport t(inner, clock, {}, 1);
  Request post = get();
  post.method = "POST";
  post.idempotent = true;
  CHECK(t.perform(post).status == 201);
  Request patch = get();
  patch.method = "PATCH";
  CHECK(t.perform(patch).status == 502);
  CHECK(inner.seen.size() == 3);
}

TEST_CASE("retry: 4xx other than 429 and TLS failures are not retried") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(404), failed(TransportFailure::kTls)};
  RetryingTransport t(inner, clock, {}, 1);
  CHECK(t.perform(get()).status == 404);
  CHECK(t.perform(get()).failure == TransportFailure::kTls);
  CHECK(inner.seen.size() == 2);
}

TEST_CASE("retry: Retry-After in seconds is honoured") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(429, "", {{"Retry-After", "7"}}), canned(200)};
  RetryingTransport t(inner, clock, {}, 1);
  CHECK(t.perform(get()).status == 200);
  REQUIRE(clock.sleeps.size() == 1);
  CHECK(clock.sleeps[0] == 7000ms);
}

TEST_CASE("retry: Retry-After as an HTTP date is honoured") {
  ScriptedTransport inner;
  FakeClock clock;
  clock.wall = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  inner.script = {canned(503, "", {{"retry-after", "Sun, 06 Nov 1994 08:49:49 GMT"}}), canned(200)};
  RetryingTransport t(inner, clock, {}, 1);
  CHECK(t.perform(get()).status == 200);
  REQUIRE(clock.sleeps.size() == 1);
  CHECK(clock.sleeps[0] == 12000ms);
}

TEST_CASE("retry: a huge Retry-After is cut to the policy's maximum") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(429, "", {{"Retry-After", "86400"}}), canned(200)};
  RetryPolicy p;
  p.max_retry_after = 5000ms;
  RetryingTransport t(inner, clock, p, 1);
  CHECK(t.perform(get()).status == 200);
  CHECK(clock.sleeps.at(0) == 5000ms);
}

TEST_CASE("retry: gives up after max_attempts and returns the last answer") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(503), canned(503), canned(503), canned(200)};
  RetryPolicy p;
  p.max_attempts = 3;
  RetryingTransport t(inner, clock, p, 1);
  CHECK(t.perform(get()).status == 503);
  CHECK(inner.seen.size() == 3);
  CHECK(clock.sleeps.size() == 2);
}

TEST_CASE("retry: a streamed response only shows the attempt that is kept") {
  ScriptedTransport inner;
  FakeClock clock;
  inner.script = {canned(503, "busy"), canned(200, "hello")};
  RetryingTransport t(inner, clock, {}, 1);
  std::vector<int> statuses;
  std::string body;
  Request r = get();
  r.on_headers = [&](int s, const Headers&) { statuses.push_back(s); };
  r.on_data = [&](std::string_view d) {
    body += d;
    return true;
  };
  CHECK(t.perform(r).status == 200);
  CHECK(statuses == std::vector<int>{200});
  CHECK(body == "hello");
}

TEST_CASE("retry: perform_all retries only the requests that need it") {
  ScriptedTransport inner;
  FakeClock clock;
  // The fake answers in order: first batch a=200, b=503; second batch b=200.
  inner.script = {canned(200, "a"), canned(503), canned(200, "b")};
  RetryingTransport t(inner, clock, {}, 1);
  auto out = t.perform_all({get("https://x/a"), get("https://x/b")});
  CHECK(out.at(0).body == "a");
  CHECK(out.at(1).body == "b");
  REQUIRE(inner.seen.size() == 3);
  CHECK(inner.seen[2].url == "https://x/b");
}

TEST_CASE("retry: retry_after ignores garbage") {
  Response r = canned(429, "", {{"Retry-After", "soon"}});
  CHECK_FALSE(retry_after(r, std::chrono::system_clock::now()).has_value());
}
