#include "net/spdy.h"

#include <doctest/doctest.h>

#include <string>

using namespace ktrain::net::spdy;

namespace {

Frame only_frame(const std::string& bytes) {
  FrameReader r;
  r.feed(bytes);
  auto f = r.next();
  REQUIRE(f.has_value());
  CHECK_FALSE(r.next().has_value());
  return *f;
}

}  // namespace

TEST_CASE("spdy: the dictionary is SPDY/3's: length-prefixed names, then common values") {
  const std::string& d = dictionary();
  CHECK(d.size() == 1423);
  CHECK(d.substr(0, 11) == std::string("\0\0\0\7options", 11));
  CHECK(d.find(std::string("\0\0\0\6origin", 10)) != std::string::npos);
  CHECK(d.substr(d.size() - 6) == "enq=0.");
}

TEST_CASE("spdy: header blocks survive a round trip, block after block on one zlib stream") {
  HeaderDeflater out;
  HeaderInflater in;
  for (int i = 0; i < 50; ++i) {
    const std::string id = std::to_string(i);
    ktrain::net::spdy::Headers h = in.decode(out.encode(
        {{"streamtype", i % 2 ? "data" : "error"}, {"port", "8080"}, {"requestid", id}}));
    CHECK(h.size() == 3);
    CHECK(h["streamtype"] == std::vector<std::string>{i % 2 ? "data" : "error"});
    CHECK(h["requestid"] == std::vector<std::string>{id});
  }
  CHECK(in.decode(out.encode({})).empty());
  // Several values of one header are joined by NUL.
  ktrain::net::spdy::Headers multi = in.decode(out.encode({{"accept", std::string("a\0b", 3)}}));
  CHECK(multi["accept"] == std::vector<std::string>{"a", "b"});
}

TEST_CASE("spdy: frames come out whole, whatever pieces the bytes arrive in") {
  HeaderDeflater out;
  const std::string block = out.encode({{"port", "6006"}});
  const std::string bytes = syn_stream(5, block, false) + data_frame(5, "hello", true) +
                            rst_stream(5, kRstCancel) + ping(7) + goaway(5, kGoAwayOk);
  FrameReader r;
  std::vector<Frame> frames;
  for (char c : bytes) {
    r.feed(std::string(1, c));
    while (auto f = r.next()) frames.push_back(*f);
  }
  REQUIRE(frames.size() == 5);
  CHECK(frames[0].control);
  CHECK(frames[0].type == kSynStream);
  CHECK(frames[0].stream_id == 5);
  CHECK(syn_stream_block(frames[0]) == block);
  CHECK_FALSE(frames[1].control);
  CHECK(frames[1].stream_id == 5);
  CHECK(frames[1].payload == "hello");
  CHECK(frames[1].flags == kFlagFin);
  CHECK(frames[2].type == kRstStream);
  CHECK(frames[2].word(1) == kRstCancel);
  CHECK(frames[3].type == kPing);
  CHECK(frames[3].word(0) == 7);
  CHECK(frames[4].type == kGoAway);
  CHECK(frames[4].word(0) == 5);

  HeaderInflater in;
  Frame reply = only_frame(syn_reply(5, out.encode({}), true));
  CHECK(reply.type == kSynReply);
  CHECK(reply.flags == kFlagFin);
  CHECK(reply.stream_id == 5);
  CHECK(in.decode(syn_stream_block(frames[0]))["port"] == std::vector<std::string>{"6006"});
  CHECK(in.decode(reply_block(reply)).empty());
}

TEST_CASE("spdy: bad frames and header blocks are protocol errors") {
  SUBCASE("another version") {
    std::string f = ping(1);
    f[1] = 2;  // SPDY/2
    FrameReader r;
    r.feed(f);
    CHECK_THROWS_WITH_AS(r.next(), "unsupported SPDY version 2", ProtocolError);
  }
  SUBCASE("stream 0") {
    FrameReader r;
    r.feed(data_frame(0, "x", false));
    CHECK_THROWS_AS(r.next(), ProtocolError);
    FrameReader r2;
    r2.feed(rst_stream(0, kRstCancel));
    CHECK_THROWS_AS(r2.next(), ProtocolError);
  }
  SUBCASE("a control frame too short for its fields") {
    std::string f = rst_stream(1, kRstCancel).substr(0, 8);
    f[7] = 0;  // length 0
    FrameReader r;
    r.feed(f);
    CHECK_THROWS_AS(r.next(), ProtocolError);
  }
  SUBCASE("a header block that is not zlib") {
    HeaderInflater in;
    CHECK_THROWS_AS(in.decode("not a zlib stream"), ProtocolError);
  }
  SUBCASE("a header block compressed with another dictionary") {
    z_stream z{};
    REQUIRE(deflateInit(&z, Z_DEFAULT_COMPRESSION) == Z_OK);
    const std::string other = "another dictionary";
    deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(other.data()),
                         static_cast<uInt>(other.size()));
    std::string plain("\0\0\0\0", 4), out(256, '\0');
    z.next_in = reinterpret_cast<Bytef*>(plain.data());
    z.avail_in = static_cast<uInt>(plain.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_SYNC_FLUSH);
    out.resize(out.size() - z.avail_out);
    deflateEnd(&z);
    HeaderInflater in;
    CHECK_THROWS_WITH_AS(in.decode(out), "header block: not compressed with SPDY/3's dictionary",
                         ProtocolError);
  }
  SUBCASE("a truncated header block") {
    HeaderDeflater out;
    const std::string block = out.encode({{"port", "1"}, {"streamtype", "data"}});
    HeaderInflater in;
    CHECK_THROWS_WITH_AS(in.decode(block.substr(0, block.size() / 2)), "header block: truncated",
                         ProtocolError);
  }
}
