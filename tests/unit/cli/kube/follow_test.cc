#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/kube_follow.h"
#include "kube/watch.h"

using ktrain::backend::LineDedup;
using ktrain::backend::TimestampParser;

namespace {

constexpr std::int64_t kSecond = 1'000'000'000;
// 2026-11-29T17:28:40Z
constexpr std::int64_t kBase = 1'795'973'320LL * kSecond;

/// Feeds `ts` to `d` and returns the ones it accepted.
std::vector<std::int64_t> feed(LineDedup& d, const std::vector<std::int64_t>& ts) {
  std::vector<std::int64_t> out;
  for (auto t : ts) {
    if (d.accept(t)) out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_CASE("TimestampParser reads the API server's log timestamps") {
  TimestampParser p;
  CHECK(p.parse("2026-11-29T17:28:40Z") == kBase);
  CHECK(p.parse("2026-11-29T17:28:40.000000001Z") == kBase + 1);
  CHECK(p.parse("2026-11-29T17:28:40.5Z") == kBase + kSecond / 2);  // trailing zeros trimmed
  CHECK(p.parse("2026-11-29T17:28:40.123456789Z") == kBase + 123456789);
  CHECK(p.parse("2026-11-29T17:28:41.25Z") == kBase + kSecond + kSecond / 4);  // the next second
  CHECK(p.parse("2026-11-29T18:28:40.1+01:00") == kBase + kSecond / 10);       // an offset
  CHECK(p.parse("2026-11-29T17:28:40.1234567891Z") == kBase + 123456789);      // beyond ns: cut
  CHECK_FALSE(p.parse("2026-11-29T17:28:40."));
  CHECK_FALSE(p.parse("2026-11-29T17:28:40.Z"));
  CHECK_FALSE(p.parse("2026-11-29 17:28:40Z"));
  CHECK_FALSE(p.parse("not a timestamp at all"));
  CHECK_FALSE(p.parse("2026-11-29T17:28:4xZ"));
  // A bad second after a cached one is still refused.
  CHECK(p.parse("2026-11-29T17:28:40Z") == kBase);
  CHECK_FALSE(p.parse("2026-13-29T17:28:40Z"));
}

TEST_CASE("LineDedup passes everything on one connection") {
  LineDedup d;
  std::vector<std::int64_t> ts{kBase, kBase, kBase + 5, kBase + 5, kBase + 5, kBase + kSecond};
  CHECK(feed(d, ts) == ts);
  CHECK(d.has_last());
  CHECK(d.last() == kBase + kSecond);
}

TEST_CASE("LineDedup drops the overlap of a resumed stream") {
  LineDedup d;
  // First connection: lines at .1 .2 .3 (two at .3), then the stream drops.
  CHECK(feed(d, {kBase + 1, kBase + 2, kBase + 3, kBase + 3}).size() == 4);
  d.reconnect();
  // The server resends from the second: .1 .2 .3 .3 are repeats; a third line at .3
  // and everything later are new.
  auto got = feed(d, {kBase + 1, kBase + 2, kBase + 3, kBase + 3, kBase + 3, kBase + 4});
  CHECK(got == std::vector<std::int64_t>{kBase + 3, kBase + 4});
}

TEST_CASE("LineDedup: a cut right after the last line, and repeated cuts") {
  LineDedup d;
  feed(d, {kBase + 1, kBase + 2});
  d.reconnect();
  CHECK(feed(d, {kBase + 1}).empty());  // cut again inside the overlap
  d.reconnect();
  CHECK(feed(d, {kBase + 1, kBase + 2}).empty());
  d.reconnect();
  CHECK(feed(d, {kBase + 1, kBase + 2, kBase + 7}) == std::vector<std::int64_t>{kBase + 7});
  CHECK(d.last() == kBase + 7);
}

TEST_CASE("LineDedup: reconnecting before any line changes nothing") {
  LineDedup d;
  d.reconnect();
  CHECK_FALSE(d.has_last());
  CHECK(feed(d, {kBase, kBase}) == std::vector<std::int64_t>{kBase, kBase});
}

TEST_CASE("LineDedup: an out-of-order line on a live connection is kept") {
  LineDedup d;
  CHECK(feed(d, {kBase + 10, kBase + 5, kBase + 11}).size() == 3);
  CHECK(d.last() == kBase + 11);
}

TEST_CASE("reconnect_delay doubles from 100 ms up to 5 s") {
  using ktrain::kube::reconnect_delay;
  CHECK(reconnect_delay(1).count() == 100);
  CHECK(reconnect_delay(2).count() == 200);
  CHECK(reconnect_delay(3).count() == 400);
  CHECK(reconnect_delay(7).count() == 5000);
  CHECK(reconnect_delay(100).count() == 5000);
}

TEST_CASE("TimestampParser: a timestamp past what nanoseconds since 1970 can hold is none") {
  // Found by tests/fuzz (log_lines): the year 9999 overflowed the nanosecond count.
  TimestampParser p;
  CHECK_FALSE(p.parse("9999-12-31T23:59:59.000000001Z"));
  CHECK_FALSE(p.parse("0001-01-01T00:00:00Z"));
  CHECK_FALSE(p.parse("9999-12-31T23:59:59+01:00"));
  CHECK(p.parse("2026-11-29T17:28:40.5Z") == std::int64_t{1'795'973'320'500'000'000});
}
