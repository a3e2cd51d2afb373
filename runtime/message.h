#pragma once
// Rendezvous messages and their framing on the wire: a 4-byte big-endian length,
// then the body "TYPE\nkey=value\n...". Values never hold a newline.

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktrain::launch {

/// The largest frame body accepted from a peer that has authenticated (a world of
/// thousands of nodes fits easily).
inline constexpr uint32_t kMaxFrame = 4u << 20;

/// The largest frame body accepted before the peer has authenticated: the
/// handshake's messages (hello, challenge, auth) are small.
inline constexpr uint32_t kMaxHandshakeFrame = 4u << 10;

/// One message: a type word and ordered key/value fields.
struct Message {
  std::string type;
  std::vector<std::pair<std::string, std::string>> fields;

  /// Appends a field; newlines in the value are replaced by spaces.
  Message& set(const std::string& key, const std::string& value);
  /// Returns the value of `key`, or nullptr when absent.
  const std::string* find(std::string_view key) const;
  /// Returns the value of `key`; throws LaunchError(76) naming the key when absent.
  const std::string& get(std::string_view key) const;
  /// Returns the value of `key` as a decimal integer in `lo`..`hi`; throws
  /// LaunchError(76) when it is absent, not a number or out of that range.
  long get_int(std::string_view key, long lo = LONG_MIN, long hi = LONG_MAX) const;
};

/// Returns the body of `m` (without the length prefix).
std::string encode_body(const Message& m);

/// Parses a body; throws LaunchError(76) when it is malformed.
Message decode_body(std::string_view body);

/// Returns `m` framed: length prefix plus body.
std::string frame(const Message& m);

/// Parses a whole decimal integer in `lo`..`hi` (an optional '-', then digits);
/// returns false on anything else, overflow included.
bool parse_decimal(std::string_view text, long lo, long hi, long& out);

/// Collects bytes from a stream and cuts them into messages. A frame's length is
/// checked as soon as its header is in, before any of its body is taken.
class FrameReader {
 public:
  /// `max_frame` is the largest frame body accepted.
  explicit FrameReader(uint32_t max_frame = kMaxFrame) : max_frame_(max_frame) {}
  /// Changes the largest frame body accepted, for the frames not taken yet.
  void set_max_frame(uint32_t max_frame);
  /// Appends received bytes.
  void feed(std::string_view bytes);
  /// How many bytes may be fed now: the rest of the next frame's header, else the
  /// rest of its body, and never more than one largest frame held in all; 0 once
  /// a header claims more than the limit (next() then throws).
  size_t room() const;
  /// Takes the next complete message into `out`; returns false when none is complete yet.
  /// Throws LaunchError(76) on an oversized or malformed frame.
  bool next(Message& out);
  /// Bytes held that have not been taken as messages.
  size_t pending() const { return buf_.size() - head_; }

 private:
  uint32_t length_at(size_t pos) const;
  void scan();
  std::string buf_;
  size_t head_ = 0;  // where the first frame not taken starts
  size_t scan_ = 0;  // where the first frame not yet complete starts
  bool oversized_ = false;
  uint32_t max_frame_;
};

}  // namespace ktrain::launch
