#pragma once
// A scripted HttpTransport for unit tests: answers requests from a queue of canned
// responses and records what was asked of it.

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "base/env.h"
#include "net/http.h"

namespace ktrain::net::testing {

/// One canned answer: a status with headers and body, or a failure below HTTP.
inline Response canned(int status, std::string body = "", Headers headers = {}) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  r.http_version = "1.1";
  return r;
}

/// A failure below HTTP (status 0).
inline Response failed(TransportFailure f, std::string message = "scripted failure") {
  Response r;
  r.failure = f;
  r.failure_message = std::move(message);
  return r;
}

/// Answers each request with the next scripted response (or 599 when the script is
/// empty) and keeps a copy of each request. Streams bodies through on_headers/on_data
/// like the real transport.
class ScriptedTransport : public HttpTransport {
 public:
  std::deque<Response> script;
  std::vector<Request> seen;
  /// The body of each request in `seen` (read through body_reader when it has one).
  std::vector<std::string> bodies;

  Response perform(const Request& req) override {
    Response r;
    {
      std::lock_guard<std::mutex> g(mutex_);
      seen.push_back(req);
      std::string body = req.body;
      if (req.body_reader) {
        char buf[4096];
        for (std::size_t n; (n = req.body_reader(body.size(), buf, sizeof buf)) > 0;) {
          body.append(buf, n);
        }
      }
      bodies.push_back(std::move(body));
      if (script.empty()) {
        r = canned(599, "script exhausted");
      } else {
        r = script.front();
        script.pop_front();
      }
    }
    if (r.failure == TransportFailure::kNone || r.status != 0) {
      if (req.on_headers) req.on_headers(r.status, r.headers);
      if (req.on_data) {
        if (!r.body.empty() && !req.on_data(r.body)) r.failure = TransportFailure::kAborted;
        r.body.clear();
      }
    }
    return r;
  }

  std::vector<Response> perform_all(const std::vector<Request>& reqs) override {
    std::vector<Response> out;
    for (const auto& r : reqs) out.push_back(perform(r));
    return out;
  }

 private:
  std::mutex mutex_;
};

/// A clock that never sleeps: sleep_for records the delay and advances time.
class FakeClock : public Clock {
 public:
  std::chrono::system_clock::time_point wall =
      std::chrono::system_clock::from_time_t(1'700'000'000);
  std::chrono::steady_clock::time_point mono{};
  std::vector<std::chrono::milliseconds> sleeps;

  std::chrono::system_clock::time_point now() override { return wall; }
  std::chrono::steady_clock::time_point steady_now() override { return mono; }
  void sleep_for(std::chrono::milliseconds d) override {
    sleeps.push_back(d);
    wall += d;
    mono += d;
  }
};

}  // namespace ktrain::net::testing
