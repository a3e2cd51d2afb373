#include "runtime/message.h"

#include <doctest/doctest.h>

#include "runtime/error.h"

using namespace ktrain::launch;

TEST_CASE("message: encode and decode keep type and ordered fields") {
  Message m;
  m.type = "hello";
  m.set("node_rank", "3").set("addr", "10.0.0.7").set("note", "two\nlines");
  Message back = decode_body(encode_body(m));
  CHECK(back.type == "hello");
  REQUIRE(back.fields.size() == 3);
  CHECK(back.get("addr") == "10.0.0.7");
  CHECK(back.get_int("node_rank") == 3);
  CHECK(back.get("note") == "two lines");  // a newline cannot break the framing
  CHECK(back.find("missing") == nullptr);
  CHECK_THROWS_AS(back.get("missing"), LaunchError);
  CHECK_THROWS_AS(back.get_int("addr"), LaunchError);
}

TEST_CASE("message: frames are cut correctly from a byte stream fed one byte at a time") {
  Message a, b;
  a.type = "done";
  b.type = "failed";
  b.set("cause", "rank 13 exited 1");
  std::string stream = frame(a) + frame(b);
  FrameReader r;
  std::vector<Message> got;
  for (char c : stream) {
    r.feed(std::string_view(&c, 1));
    Message m;
    while (r.next(m)) got.push_back(m);
  }
  REQUIRE(got.size() == 2);
  CHECK(got[0].type == "done");
  CHECK(got[1].get("cause") == "rank 13 exited 1");
  CHECK(r.pending() == 0);
}

TEST_CASE("message: oversized and malformed frames are errors of the rendezvous (76)") {
  FrameReader r;
  r.feed(std::string("\x7f\x00\x00\x00", 4));
  Message m;
  try {
    r.next(m);
    FAIL("no error");
  } catch (const LaunchError& e) {
    CHECK(e.status() == 76);
    CHECK(std::string(e.what()).find("oversized") != std::string::npos);
  }
  CHECK_THROWS_AS(decode_body("no-newline"), LaunchError);
  CHECK_THROWS_AS(decode_body("type\nnoequals\n"), LaunchError);
  CHECK_THROWS_AS(decode_body("type\nk=v"), LaunchError);
}

TEST_CASE("message: a number beyond the range of long is refused, not clamped") {
  Message m;
  m.type = "hello";
  m.set("node_rank", "99999999999999999999999").set("nproc", "-99999999999999999999999");
  CHECK_THROWS_AS(m.get_int("node_rank"), LaunchError);
  CHECK_THROWS_AS(m.get_int("nproc"), LaunchError);
}

TEST_CASE("message: the reader takes a header, then its body, and never more than one frame") {
  FrameReader r(100);
  CHECK(r.room() == 4);  // the header first
  Message a;
  a.type = "done";
  const std::string fa = frame(a);  // 4 + 5 bytes
  r.feed(fa.substr(0, 2));
  CHECK(r.room() == 2);
  r.feed(fa.substr(2, 2));
  CHECK(r.room() == 5);  // the header is in: exactly its body
  r.feed(fa.substr(4));
  CHECK(r.room() == 4);  // the next header
  Message m;
  REQUIRE(r.next(m));
  CHECK(m.type == "done");
  CHECK(r.pending() == 0);

  // A header over the limit: nothing more is wanted, and next() says why.
  r.feed(std::string("\x00\x00\x00\x65", 4));  // 101 bytes
  CHECK(r.room() == 0);
  CHECK_THROWS_WITH_AS(r.next(m), doctest::Contains("oversized"), LaunchError);
  r.set_max_frame(200);  // raised (as after authentication): the frame is acceptable now
  CHECK(r.room() == 101);

  // Complete frames wait to be taken: never more than one largest frame is held.
  FrameReader full(10);
  for (int i = 0; i < 3; ++i) full.feed(fa);
  CHECK(full.pending() == 27);
  CHECK(full.room() == 0);
  REQUIRE(full.next(m));
  REQUIRE(full.next(m));
  CHECK(full.room() == 4);
}
