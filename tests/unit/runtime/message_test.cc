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
