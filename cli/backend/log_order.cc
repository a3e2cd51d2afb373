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
  held_.push(Held{ts, seq_++, arrived, line});
  const bool was_empty = held_.size() == 1;
  bool ok = true;
  bool sent = false;
  while (ok && held_.size() > opts_.max_lines && !opts_.hold_all) {
    ok = pop_one();
    sent = true;
  }
  lk.unlock();
  if (sent && opts_.flush) opts_.flush();
  if (was_empty) cv_.notify_all();  // the thread sleeps without a deadline when empty
  return ok;
}

bool OrderedLogSink::pop_one() {
  // priority_queue::top is const: the line is moved out through a const_cast, which is
  // safe as the element is popped at once.
  LogLine line = std::move(const_cast<Held&>(held_.top()).line);
  held_.pop();
  if (!downstream_(line)) stopped_ = true;
  return !stopped_;
}

bool OrderedLogSink::release(std::chrono::steady_clock::time_point now) {
  bool sent = false;
  bool ok = true;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopped_) return false;
    while (ok && !held_.empty() && !opts_.hold_all && held_.top().arrived + opts_.window <= now) {
      ok = pop_one();
      sent = true;
    }
  }
  if (sent && opts_.flush) opts_.flush();
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
  bool sent = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    while (ok && !stopped_ && !held_.empty()) {
      ok = pop_one();
      sent = true;
    }
    ok = ok && !stopped_;
  }
  if (sent && opts_.flush) opts_.flush();
  return ok;
}

void OrderedLogSink::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!done_ && !stopped_) {
    if (held_.empty()) {
      cv_.wait(lk);
      continue;
    }
    const auto due = held_.top().arrived + opts_.window;
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
