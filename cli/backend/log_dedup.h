#pragma once
// Reading the timestamps in front of the API server's log lines, and delivering one
// container's lines exactly once across reconnections that resume from a timestamp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ktrain::backend {

/// Parses the RFC 3339 timestamps the API server puts in front of log lines
/// ("2026-11-29T17:28:40.123456789Z", any number of fraction digits, "Z" or an
/// offset) into nanoseconds since the epoch. Remembers the last whole second it
/// parsed, so that a run of lines within one second costs no calendar arithmetic.
class TimestampParser {
 public:
  /// Nanoseconds since the epoch; nullopt when `ts` is not such a timestamp.
  std::optional<std::int64_t> parse(std::string_view ts);

 private:
  std::string second_;  ///< "YYYY-MM-DDTHH:MM:SS" of the cached second
  std::int64_t second_ns_ = 0;
};

/// Exactly-once delivery of one container's log across reconnections. The lines of a
/// container log come in timestamp order; after a reconnection from sinceTime (the
/// last timestamp rounded down to the second), the stream repeats some lines: those
/// older than the last line delivered, and those with the same timestamp as it, as
/// many as were delivered. Those are dropped; everything after is new.
class LineDedup {
 public:
  /// A new connection starts (resumed with sinceTime <= the last timestamp).
  void reconnect();
  /// Whether a line with timestamp `ts` (ns since the epoch) is new; counts it if so.
  bool accept(std::int64_t ts);
  /// Whether a line has been delivered.
  bool has_last() const { return has_last_; }
  /// The timestamp of the last line delivered (valid when has_last()).
  std::int64_t last() const { return last_; }

 private:
  bool has_last_ = false;
  std::int64_t last_ = 0;
  long delivered_at_last_ = 0;  ///< lines delivered with timestamp == last_
  bool caught_up_ = true;       ///< this connection is past the repeated lines
  long repeated_at_last_ = 0;   ///< lines with timestamp == last_ seen on this connection
};

}  // namespace ktrain::backend
