#pragma once
// Retries with exponential backoff and jitter, as a decorator of any HttpTransport.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

#include "base/env.h"
#include "net/http.h"

namespace ktrain::net {

/// How RetryingTransport retries.
struct RetryPolicy {
  int max_attempts = 5;                               ///< attempts in all, including the first
  std::chrono::milliseconds base_delay{250};          ///< the delay before the first retry
  std::chrono::milliseconds max_delay{15'000};        ///< no computed delay is longer
  std::chrono::milliseconds max_retry_after{60'000};  ///< a longer Retry-After is cut to this
};

/// Whether a response is worth trying again: 429, 500, 502, 503, 504, or a connection
/// dropped, reset or timed out (a refused connection is, too: the server may be starting).
bool is_retryable(const Response& resp);

/// The delay that a Retry-After header asks for (delta-seconds or an HTTP date, relative
/// to `now`), if the response has a valid one.
std::optional<std::chrono::milliseconds> retry_after(const Response& resp,
                                                     std::chrono::system_clock::time_point now);

/// Wraps a transport and retries idempotent requests (is_idempotent) that failed in a
/// retryable way, sleeping through the Clock: base_delay * 2^attempt with "equal
/// jitter" (half fixed, half random), or the server's Retry-After when it gives one.
/// A streamed response (on_data) is retried only while none of its body has been
/// handed over; the callbacks see only the attempt that is kept.
class RetryingTransport : public HttpTransport {
 public:
  /// `inner` and `clock` must outlive this. `seed` makes the jitter reproducible.
  RetryingTransport(HttpTransport& inner, Clock& clock, RetryPolicy policy = {},
                    std::uint64_t seed = std::random_device{}());

  Response perform(const Request& req) override;
  std::vector<Response> perform_all(const std::vector<Request>& reqs) override;
  /// Passed to the inner transport as it is, without retries (see HttpTransport::start).
  void start(Request req, std::function<void(Response)> done) override {
    inner_.start(std::move(req), std::move(done));
  }

  /// The delay before retry number `retry` (0-based) of `resp`.
  std::chrono::milliseconds delay_for(int retry, const Response& resp);

 private:
  HttpTransport& inner_;
  Clock& clock_;
  RetryPolicy policy_;
  std::mutex rng_mutex_;
  std::mt19937_64 rng_;
};

}  // namespace ktrain::net
