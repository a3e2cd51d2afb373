#pragma once
// The authentication of what a rendezvous connection carries after the handshake
// (world, abort, reject, stop, failed, done): every message gets a sequence number
// and an HMAC-SHA256 under a key that only the two ends of this connection hold,
// so that a message cannot be forged, replayed, reordered, moved to another
// connection or sent back to its sender.

#include <cstdint>
#include <string>
#include <utility>

#include "runtime/message.h"

namespace ktrain::launch {

/// Which end of a connection a Session is.
enum class SessionRole { kNode0, kNode };

/// Returns the key of one connection's session: HMAC-SHA256 of the secret over the
/// run and both nonces of its handshake.
std::string session_key(const std::string& secret, const std::string& run,
                        const std::string& snonce, const std::string& cnonce);

/// Seals the messages one end sends and opens those it receives.
class Session {
 public:
  Session(std::string key, SessionRole role) : key_(std::move(key)), role_(role) {}

  /// Returns `m` with two fields appended: "seq", the number of messages sealed
  /// before it, and "mac", the HMAC of the body up to there and of the sender's role.
  Message seal(const Message& m);

  /// Checks that `m` was sealed by the other end and is the next one it sent, and
  /// removes "seq" and "mac"; throws LaunchError(76) otherwise (forged, replayed,
  /// reordered or reflected), without quoting the message.
  void open(Message& m);

 private:
  std::string mac(SessionRole sender, const Message& m) const;
  std::string key_;
  SessionRole role_;
  uint64_t sent_ = 0;
  uint64_t received_ = 0;
};

}  // namespace ktrain::launch
