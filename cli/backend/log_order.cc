#include "backend/log_order.h"

#include <utility>

namespace ktrain::backend {

OrderedLogSink::OrderedLogSink(LogSink downstream, Options opts)
    : downstream_(std::move(downstream)), opts_(std::move(opts)) {
  if (opts_.background && !opts_.hold_all) thread_ = std::thread([this] { run(); });
}

OrderedLogSink::~OrderedLogSink() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool OrderedLogSink::push(const LogLine& line, std::chrono::steady_clock::time_point arrived) {
  std::unique_lock<std::mutex> lk(mu_);
  if (stopped_) return false;
  std::int64_t ts = newest_;
  if (!line.timestamp.empty()) {
    if (auto t = parser_.parse(line.timestamp)) ts = *t;
  }
  if (ts > newest_) newest_ = ts;
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& held = slots_[slot];
  held.rank = line.rank;
  held.notice = line.notice;
  held.ts_len = static_cast<std::uint32_t>(line.timestamp.size());
  held.buf.assign(line.timestamp);  // into the buffer the slot's last line left
  held.buf.append(line.text);
  held_.push(Held{ts, seq_++, arrived, slot});
  const bool was_empty = held_.size() == 1;
  bool ok = true;
  // Past the bound the oldest goes out now, unflushed: the next release flushes it
  // (a flush per line here cost a write per line when hundreds of streams outran the
  // window).
  while (ok && held_.size() > opts_.max_lines && !opts_.hold_all) ok = pop_one();
  lk.unlock();
  if (was_empty) cv_.notify_all();  // the thread sleeps without a deadline when empty
  return ok;
}

bool OrderedLogSink::pop_one() {
  const std::uint32_t slot = held_.top().slot;
  held_.pop();
  Slot& held = slots_[slot];
  out_.rank = held.rank;
  out_.notice = held.notice;
  out_.timestamp.assign(held.buf, 0, held.ts_len);
  out_.text.assign(held.buf, held.ts_len);
  if (!downstream_(out_)) stopped_ = true;
  // A slot keeps the buffer of an ordinary line for the next one, not a long one's.
  constexpr std::size_t kKeptBytes = 1024;
  if (held.buf.capacity() > kKeptBytes) std::string().swap(held.buf);
  if (out_.text.capacity() > kKeptBytes) std::string().swap(out_.text);
  free_slots_.push_back(slot);
  unflushed_ = true;
  return !stopped_;
}

void OrderedLogSink::flush_sent() {
  bool flush = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    flush = std::exchange(unflushed_, false);
  }
  if (flush && opts_.flush) opts_.flush();
}

bool OrderedLogSink::release(std::chrono::steady_clock::time_point now) {
  bool ok = true;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopped_) return false;
    while (ok && !held_.empty() && !opts_.hold_all && held_.top().arrived + opts_.window <= now) {
      ok = pop_one();
    }
  }
  flush_sent();
  return ok;
}

bool OrderedLogSink::finish() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  bool ok = true;
  {
    std::lock_guard<std::mutex> lk(mu_);
    while (ok && !stopped_ && !held_.empty()) ok = pop_one();
    ok = ok && !stopped_;
  }
  flush_sent();
  return ok;
}

void OrderedLogSink::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!done_ && !stopped_) {
    if (held_.empty()) {
      cv_.wait(lk);
      continue;
    }
    // What falls due within a batch goes out together: at most one release (and
    // one flush) a batch, however many streams there are.
    const auto due = held_.top().arrived + opts_.window + opts_.batch;
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lk, due);
      continue;
    }
    lk.unlock();
    release(std::chrono::steady_clock::now());
    lk.lock();
  }
}

}  // namespace ktrain::backend
