#include "net/retry.h"

#include <time.h>

#include <algorithm>
#include <memory>

namespace ktrain::net {

bool is_retryable(const Response& resp) {
  switch (resp.failure) {
    case TransportFailure::kNone:
      break;
    case TransportFailure::kDropped:
    case TransportFailure::kTimeout:
    case TransportFailure::kConnect:
      return true;
    default:
      return false;
  }
  const int s = resp.status;
  return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

std::optional<std::chrono::milliseconds> retry_after(const Response& resp,
                                                     std::chrono::system_clock::time_point now) {
  auto v = resp.header("Retry-After");
  if (!v || v->empty()) return std::nullopt;
  const std::string& s = *v;
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (s.size() > 9) return std::chrono::milliseconds(std::chrono::hours(24));
    return std::chrono::seconds(std::stol(s));
  }
  // An HTTP date: "Sun, 06 Nov 1994 08:49:37 GMT".
  struct tm tm {};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end) return std::nullopt;
  auto when = std::chrono::system_clock::from_time_t(timegm(&tm));
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(when - now);
  return std::max(d, std::chrono::milliseconds(0));
}

RetryingTransport::RetryingTransport(HttpTransport& inner, Clock& clock, RetryPolicy policy,
                                     std::uint64_t seed)
    : inner_(inner), clock_(clock), policy_(policy), rng_(seed) {}

std::chrono::milliseconds RetryingTransport::delay_for(int retry, const Response& resp) {
  if (auto ra = retry_after(resp, clock_.now())) return std::min(*ra, policy_.max_retry_after);
  long long base = policy_.base_delay.count();
  for (int i = 0; i < retry && base < policy_.max_delay.count(); ++i) base *= 2;
  base = std::min<long long>(base, policy_.max_delay.count());
  long long half = base / 2;
  long long jitter = 0;
  {
    std::lock_guard<std::mutex> g(rng_mutex_);
    jitter = half > 0 ? std::uniform_int_distribution<long long>(0, half)(rng_) : 0;
  }
  return std::chrono::milliseconds(base - half + jitter);
}

namespace {

/// The state of one request across attempts: wraps its callbacks so that only the
/// attempt that is kept reaches the caller's.
struct Attempt {
  const Request* original = nullptr;
  Request wrapped;
  bool body_delivered = false;  // some of the kept attempt's body reached on_data
  bool swallowing = false;      // this attempt will be retried: hide it from the caller
  bool may_retry = false;       // set before each attempt

  void prepare(const Request& req) {
    original = &req;
    wrapped = req;
    if (req.on_headers || req.on_data) {
      wrapped.on_headers = [this](int status, const Headers& h) {
        Response probe;
        probe.status = status;
        swallowing = may_retry && !body_delivered && is_retryable(probe);
        if (!swallowing && original->on_headers) original->on_headers(status, h);
      };
    }
    if (req.on_data) {
      wrapped.on_data = [this](std::string_view chunk) {
        if (swallowing) return true;
        body_delivered = true;
        return original->on_data(chunk);
      };
    }
  }
};

}  // namespace

Response RetryingTransport::perform(const Request& req) {
  std::vector<Request> one{req};
  return std::move(perform_all(one).front());
}

std::vector<Response> RetryingTransport::perform_all(const std::vector<Request>& reqs) {
  std::vector<Response> out(reqs.size());
  std::vector<std::unique_ptr<Attempt>> attempts;
  attempts.reserve(reqs.size());
  for (const auto& r : reqs) {
    attempts.push_back(std::make_unique<Attempt>());
    attempts.back()->prepare(r);
  }
  std::vector<size_t> todo(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) todo[i] = i;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    const bool last = attempt + 1 >= policy_.max_attempts;
    std::vector<Request> batch;
    batch.reserve(todo.size());
    for (size_t i : todo) {
      Attempt& a = *attempts[i];
      a.may_retry = !last && is_idempotent(reqs[i]);
      a.swallowing = false;
      batch.push_back(a.wrapped);
    }
    std::vector<Response> got = inner_.perform_all(batch);
    std::vector<size_t> again;
    std::chrono::milliseconds wait{0};
    for (size_t k = 0; k < todo.size(); ++k) {
      size_t i = todo[k];
      Attempt& a = *attempts[i];
      Response& resp = got[k];
      const bool retry = a.may_retry && !a.body_delivered && is_retryable(resp);
      if (retry) {
        again.push_back(i);
        wait = std::max(wait, delay_for(attempt, resp));
      } else {
        // A response without a body never called on_headers through the wrapper
        // while it was being swallowed; nothing more to do.
        out[i] = std::move(resp);
      }
    }
    if (!again.empty()) clock_.sleep_for(wait);
    todo = std::move(again);
  }
  return out;
}

}  // namespace ktrain::net
