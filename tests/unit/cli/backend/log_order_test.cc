#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "backend/log_order.h"

using ktrain::backend::LogLine;
using ktrain::backend::OrderedLogSink;

namespace {

LogLine line(int rank, const std::string& ts, const std::string& text) {
  LogLine l;
  l.rank = rank;
  l.timestamp = ts;
  l.text = text;
  return l;
}

struct Collect {
  std::vector<std::string> texts;
  int flushes = 0;
  size_t stop_after = 1000;
  ktrain::backend::LogSink sink() {
    return [this](const LogLine& l) {
      texts.push_back(l.text);
      return texts.size() < stop_after;
    };
  }
};

using std::chrono::milliseconds;
const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

}  // namespace

TEST_CASE("log order: a line that arrives late but happened first comes out first") {
  Collect out;
  OrderedLogSink::Options o;
  o.background = false;
  o.window = milliseconds(250);
  o.flush = [&out] { ++out.flushes; };
  OrderedLogSink s(out.sink(), o);
  // Node 0 says it stops because of a peer; node 1's traceback, written before it,
  // reaches us 100 ms later.
  CHECK(s.push(line(0, "2026-12-01T10:00:00.500000000Z", "stopped because of a peer"), t0));
  CHECK(s.push(line(1, "2026-12-01T10:00:00.400000000Z", "Traceback"), t0 + milliseconds(100)));
  CHECK(s.release(t0 + milliseconds(200)));
  CHECK(out.texts.empty());  // nothing is due yet
  CHECK(s.release(t0 + milliseconds(350)));
  CHECK(out.texts == std::vector<std::string>{"Traceback", "stopped because of a peer"});
  CHECK(out.flushes == 1);
}

TEST_CASE("log order: lines held are released in timestamp order, each when due") {
  Collect out;
  OrderedLogSink::Options o;
  o.background = false;
  OrderedLogSink s(out.sink(), o);
  s.push(line(0, "2026-12-01T10:00:01Z", "a1"), t0);
  s.push(line(1, "2026-12-01T10:00:02Z", "b2"), t0);
  s.push(line(0, "2026-12-01T10:00:03Z", "a3"), t0 + milliseconds(300));
  s.release(t0 + milliseconds(260));
  CHECK(out.texts == std::vector<std::string>{"a1", "b2"});
  // Equal timestamps keep their arrival order; a notice (no timestamp) takes the newest.
  s.push(line(1, "2026-12-01T10:00:03Z", "b3"), t0 + milliseconds(300));
  LogLine notice;
  notice.notice = true;
  notice.text = "node 1 restarted";
  s.push(notice, t0 + milliseconds(300));
  CHECK(s.finish());
  CHECK(out.texts == std::vector<std::string>{"a1", "b2", "a3", "b3", "node 1 restarted"});
}

TEST_CASE("log order: bounded, and a whole log sorted with hold_all") {
  Collect out;
  OrderedLogSink::Options o;
  o.background = false;
  o.max_lines = 2;
  o.flush = [&out] { ++out.flushes; };
  OrderedLogSink s(out.sink(), o);
  s.push(line(0, "2026-12-01T10:00:05Z", "5"), t0);
  s.push(line(0, "2026-12-01T10:00:06Z", "6"), t0);
  CHECK(out.texts.empty());
  s.push(line(1, "2026-12-01T10:00:04Z", "4"), t0);  // a third: the oldest goes now
  CHECK(out.texts == std::vector<std::string>{"4"});
  s.push(line(1, "2026-12-01T10:00:04.5Z", "4.5"), t0);
  CHECK(out.texts == std::vector<std::string>{"4", "4.5"});
  // ... unflushed: the next release flushes what went out, once, even with nothing due.
  CHECK(out.flushes == 0);
  CHECK(s.release(t0));
  CHECK(out.flushes == 1);
  CHECK(s.release(t0));
  CHECK(out.flushes == 1);
  // The slots of lines that went out are reused, each with the line it holds now.
  s.push(line(2, "2026-12-01T10:00:07Z", "7"), t0);
  s.finish();
  CHECK(out.texts == std::vector<std::string>{"4", "4.5", "5", "6", "7"});
  CHECK(out.flushes == 2);

  Collect all;
  OrderedLogSink::Options h;
  h.hold_all = true;
  OrderedLogSink sorted(all.sink(), h);
  for (int node = 0; node < 3; ++node) {
    for (int i = 0; i < 3; ++i) {
      sorted.push(line(node,
                       "2026-12-01T10:00:0" + std::to_string(i) + "." + std::to_string(node) + "Z",
                       std::to_string(i) + "/" + std::to_string(node)));
    }
  }
  CHECK(sorted.release(std::chrono::steady_clock::now() + std::chrono::hours(1)));
  CHECK(all.texts.empty());  // held until finish()
  sorted.finish();
  CHECK(all.texts ==
        std::vector<std::string>{"0/0", "0/1", "0/2", "1/0", "1/1", "1/2", "2/0", "2/1", "2/2"});
}

TEST_CASE("log order: downstream's stop stops it; the background thread releases on time") {
  Collect out;
  out.stop_after = 1;
  OrderedLogSink::Options o;
  o.background = false;
  OrderedLogSink s(out.sink(), o);
  s.push(line(0, "2026-12-01T10:00:01Z", "a"), t0);
  s.push(line(0, "2026-12-01T10:00:02Z", "b"), t0);
  CHECK_FALSE(s.release(t0 + milliseconds(300)));
  CHECK(out.texts == std::vector<std::string>{"a"});
  CHECK_FALSE(s.push(line(0, "2026-12-01T10:00:03Z", "c"), t0));

  Collect bg;
  OrderedLogSink::Options b;
  b.window = milliseconds(20);
  std::mutex mu;
  OrderedLogSink live(
      [&](const LogLine& l) {
        std::lock_guard<std::mutex> lk(mu);
        bg.texts.push_back(l.text);
        return true;
      },
      b);
  live.push(line(0, "2026-12-01T10:00:02Z", "late"));
  live.push(line(1, "2026-12-01T10:00:01Z", "early"));
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (bg.texts.size() == 2) break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::lock_guard<std::mutex> lk(mu);
  CHECK(bg.texts == std::vector<std::string>{"early", "late"});
}
