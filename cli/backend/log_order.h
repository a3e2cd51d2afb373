#pragma once
// Lines of several streams (a run's pods, or its local nodes) in time order. Each
// stream is in order by itself, but the streams reach us with different delays, so
// that a peer's "stopped because of a peer" can arrive before the traceback that
// caused it. OrderedLogSink holds each line for a short window after it arrives and
// releases the lines it holds oldest timestamp first (the kubelet's timestamps, or
// the local keeper's), so that lines up to `window` late still come out in order.
// Memory is bounded: past `max_lines` held, the oldest goes out at once.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/kube_follow.h"

namespace ktrain::backend {

class OrderedLogSink {
 public:
  struct Options {
    /// How long a line is held for lines older than it that arrive late.
    std::chrono::milliseconds window{250};
    /// At most this many lines held; the oldest goes out at once beyond it.
    /// (4096: a traceback from each of 64 ranks; at 200,000 lines a second, 20 ms of
    /// them. Each held line keeps its buffers: 16384 made a third of the memory of
    /// following 256 pods.)
    std::size_t max_lines = 4096;
    /// Hold every line until finish() (a whole log, sorted; no window, no bound).
    bool hold_all = false;
    /// Release due lines from a thread of its own (off in tests, which call release()).
    bool background = true;
    /// The background thread releases what is due at most this often (the lines of
    /// this long go out together, with one flush).
    std::chrono::milliseconds batch{20};
    /// Called after lines went downstream (to flush stdout once per batch).
    std::function<void()> flush;
  };

  OrderedLogSink(LogSink downstream, Options opts);
  ~OrderedLogSink();
  OrderedLogSink(const OrderedLogSink&) = delete;
  OrderedLogSink& operator=(const OrderedLogSink&) = delete;

  /// Takes a line that arrived at `arrived` (now, by default); false once downstream has
  /// said stop. Thread-safe.
  bool push(const LogLine& line,
            std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());
  /// Sends on the lines whose window has passed at `now`, in order; false once
  /// downstream has said stop.
  bool release(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  /// Sends on everything held, in order, and stops the background thread.
  bool finish();
  /// A LogSink that pushes here.
  LogSink sink() {
    return [this](const LogLine& l) { return push(l); };
  }

 private:
  /// What the heap orders: small, so that sifting moves no strings. The line itself
  /// is in slots_[slot], whose strings keep their buffers for the next line.
  struct Held {
    std::int64_t ts;    ///< ns since the epoch
    std::uint64_t seq;  ///< arrival order, among equal timestamps
    std::chrono::steady_clock::time_point arrived;
    std::uint32_t slot;
  };
  struct Later {
    bool operator()(const Held& a, const Held& b) const {
      return a.ts != b.ts ? a.ts > b.ts : a.seq > b.seq;
    }
  };

  /// Sends on the oldest line (under mu_); false when downstream said stop.
  bool pop_one();
  /// Calls opts_.flush if lines went downstream since the last one.
  void flush_sent();
  void run();

  LogSink downstream_;
  Options opts_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Held, std::vector<Held>, Later> held_;
  /// A held line: its timestamp and text in one buffer (one allocation a line, kept
  /// for the next line in the slot).
  struct Slot {
    std::string buf;  ///< the timestamp, then the text
    std::uint32_t ts_len = 0;
    int rank = 0;
    bool notice = false;
  };
  std::deque<Slot> slots_;  ///< a deque: growing moves no line
  LogLine out_;             ///< the line handed downstream (under mu_)
  std::vector<std::uint32_t> free_slots_;
  bool unflushed_ = false;  ///< lines went downstream without a flush after them
  TimestampParser parser_;
  std::int64_t newest_ = 0;  ///< the newest timestamp seen (for lines without one)
  std::uint64_t seq_ = 0;
  bool stopped_ = false;  ///< downstream said stop
  bool done_ = false;     ///< finish() was called
  std::thread thread_;
};

}  // namespace ktrain::backend
