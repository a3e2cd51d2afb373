#include "runtime/session.h"

#include "runtime/error.h"
#include "runtime/sha256.h"

namespace ktrain::launch {

std::string session_key(const std::string& secret, const std::string& run,
                        const std::string& snonce, const std::string& cnonce) {
  Digest d = hmac_sha256(secret, "ktrain-rdzv session|" + run + "|" + snonce + "|" + cnonce);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::string Session::mac(SessionRole sender, const Message& m) const {
  const char* direction = sender == SessionRole::kNode0 ? "node0>node|" : "node>node0|";
  return to_hex(hmac_sha256(key_, direction + encode_body(m)));
}

Message Session::seal(const Message& m) {
  Message out = m;
  out.set("seq", std::to_string(sent_++));
  out.set("mac", mac(role_, out));
  return out;
}

void Session::open(Message& m) {
  auto refuse = [&](const std::string& why) {
    throw LaunchError(exit_status::kRendezvous, "a message failed authentication (" + why + ")");
  };
  const size_t n = m.fields.size();
  if (n < 2 || m.fields[n - 1].first != "mac" || m.fields[n - 2].first != "seq") {
    refuse("no MAC");
  }
  const std::string got = m.fields[n - 1].second;
  m.fields.pop_back();
  const SessionRole sender =
      role_ == SessionRole::kNode0 ? SessionRole::kNode : SessionRole::kNode0;
  if (!constant_time_equal(got, mac(sender, m))) refuse("wrong MAC");
  if (m.fields.back().second != std::to_string(received_)) refuse("out of sequence: a replay?");
  m.fields.pop_back();
  ++received_;
}

}  // namespace ktrain::launch
