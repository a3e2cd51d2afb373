// Fuzzes what node 0 of a rendezvous reads from a connection: the length-prefixed
// frames (4 KiB at most before the handshake, 4 MiB after), their bodies, the hello's
// fields, and, as if sealed by the peer, authenticated messages and the world.
//
// Input: the bytes received, in chunks as FrameReader::room() allows.
// Expected: LaunchError.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/error.h"
#include "runtime/message.h"
#include "runtime/rendezvous.h"
#include "runtime/session.h"
#include "runtime/world.h"

using namespace ktrain::launch;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  FrameReader reader(kMaxHandshakeFrame);
  const std::string key = session_key("secret", "run-1", "snonce", "cnonce");
  Session node(key, SessionRole::kNode);
  Session node0(key, SessionRole::kNode0);
  bool handshake = true;
  try {
    for (int rounds = 0; rounds < 10000; ++rounds) {
      const size_t n = std::min(in.size(), reader.room());
      reader.feed(in.substr(0, n));
      in.remove_prefix(n);
      Message m;
      bool took = false;
      while (reader.next(m)) {
        took = true;
        if (handshake) {
          if (m.type == "hello") (void)parse_hello(m);
          handshake = false;
          reader.set_max_frame(kMaxFrame);
          continue;
        }
        // What the other end would send: sealed, then opened as node 0 does.
        Message sealed = decode_body(encode_body(node.seal(m)));
        node0.open(sealed);
        if (sealed.type != m.type || sealed.fields.size() != m.fields.size()) std::abort();
        if (m.type == "world") (void)parse_world(m);
      }
      if (!took && n == 0) break;
    }
  } catch (const LaunchError&) {
  }
  return 0;
}
