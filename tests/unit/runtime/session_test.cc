#include "runtime/session.h"

#include <doctest/doctest.h>

#include "runtime/error.h"

using namespace ktrain::launch;

namespace {

Message msg(const std::string& type, const std::string& cause = "") {
  Message m;
  m.type = type;
  if (!cause.empty()) m.set("cause", cause);
  return m;
}

// The error open() throws for `m`, or "" when it opens.
std::string open_error(Session& s, Message m) {
  try {
    s.open(m);
  } catch (const LaunchError& e) {
    CHECK(e.status() == 76);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("session: sealed messages open at the other end, in order, with seq and mac removed") {
  const std::string key = session_key("s3cret", "bert", "snonce", "cnonce");
  Session node0(key, SessionRole::kNode0), node(key, SessionRole::kNode);
  Message a = node.seal(msg("failed", "rank 3 exited 1"));
  CHECK(a.get("seq") == "0");
  CHECK(a.get("mac").size() == 64);
  Message b = node.seal(msg("done"));
  CHECK(b.get("seq") == "1");
  node0.open(a);
  CHECK(a.fields.size() == 1);
  CHECK(a.get("cause") == "rank 3 exited 1");
  node0.open(b);
  CHECK(b.fields.empty());
  Message c = node0.seal(msg("stop", "x"));
  node.open(c);
  CHECK(c.get("cause") == "x");
}

TEST_CASE("session: forged, tampered, replayed, reordered and reflected messages are refused") {
  const std::string key = session_key("s3cret", "bert", "snonce", "cnonce");
  Session sender(key, SessionRole::kNode);
  Message first = sender.seal(msg("done"));
  Message second = sender.seal(msg("failed", "rank 1 exited 2"));

  Session receiver(key, SessionRole::kNode0);
  CHECK(open_error(receiver, msg("done")).find("no MAC") != std::string::npos);
  Message tampered = first;
  tampered.type = "stop";
  CHECK(open_error(receiver, tampered).find("wrong MAC") != std::string::npos);
  CHECK(open_error(receiver, second).find("out of sequence") != std::string::npos);  // reordered
  CHECK(open_error(receiver, first) == "");
  CHECK(open_error(receiver, first).find("out of sequence") != std::string::npos);  // replayed
  CHECK(open_error(receiver, second) == "");

  // Sent back to its sender, or onto another connection (other nonces).
  Session reflected(key, SessionRole::kNode);
  CHECK(open_error(reflected, sender.seal(msg("done"))).find("wrong MAC") != std::string::npos);
  Session other(session_key("s3cret", "bert", "snonce2", "cnonce"), SessionRole::kNode0);
  Session fresh_sender(key, SessionRole::kNode);
  CHECK(open_error(other, fresh_sender.seal(msg("done"))).find("wrong MAC") != std::string::npos);
  // The error never quotes the message.
  Message loud = fresh_sender.seal(msg("failed", "\x1b[2J"));
  loud.set("extra", "x");
  CHECK(open_error(receiver, loud).find("\x1b") == std::string::npos);
}

TEST_CASE("session: the key depends on the secret, the run and both nonces") {
  const std::string k = session_key("s", "run", "a", "b");
  CHECK(k.size() == 32);
  CHECK(k != session_key("s2", "run", "a", "b"));
  CHECK(k != session_key("s", "run2", "a", "b"));
  CHECK(k != session_key("s", "run", "b", "a"));
}
