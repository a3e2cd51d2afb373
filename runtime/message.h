#pragma once
// Rendezvous messages and their framing on the wire: a 4-byte big-endian length,
// then the body "TYPE\nkey=value\n...". Values never hold a newline.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktrain::launch {

/// The largest frame body accepted (a world of thousands of nodes fits easily).
inline constexpr uint32_t kMaxFrame = 4u << 20;

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
  /// Returns the value of `key` as an integer; throws LaunchError(76) when absent or bad.
  long get_int(std::string_view key) const;
};

/// Returns the body of `m` (without the length prefix).
std::string encode_body(const Message& m);

/// Parses a body; throws LaunchError(76) when it is malformed.
Message decode_body(std::string_view body);

/// Returns `m` framed: length prefix plus body.
std::string frame(const Message& m);

/// Collects bytes from a stream and cuts them into messages.
class FrameReader {
 public:
  /// Appends received bytes.
  void feed(std::string_view bytes) { buf_.append(bytes); }
  /// Takes the next complete message into `out`; returns false when none is complete yet.
  /// Throws LaunchError(76) on an oversized or malformed frame.
  bool next(Message& out);
  /// Bytes held that do not yet form a whole frame.
  size_t pending() const { return buf_.size(); }

 private:
  std::string buf_;
};

}  // namespace ktrain::launch
