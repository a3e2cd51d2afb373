// Fuzzes list-then-watch (`logs --follow`, `status --watch`): the list's answer, and
// the watch stream's newline-delimited JSON events as they come in chunks of any size,
// over three watch connections (a resumed watch sees the same bytes again).
//
// Input: the list's JSON, then "\n----\n", the watch stream, then "\n----\n" and chunk
// sizes (one byte each) for the stream.
// Expected: ktrain::Error (API errors, an event too long, too many failures).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz_input.h"
#include "kube/client.h"
#include "kube/watch.h"
#include "kube_fakes.h"

namespace {

// A list answer, or a watch that streams the input; no network.
class FuzzApiServer : public ktrain::net::HttpTransport {
 public:
  FuzzApiServer(const std::vector<std::string>& parts, bool& cancelled)
      : parts_(parts), cancelled_(cancelled) {}
  ktrain::net::Response perform(const ktrain::net::Request& req) override {
    ktrain::net::Response r;
    r.status = 200;
    r.headers = {{"Content-Type", "application/json"}};
    const bool watch = req.url.find("watch=1") != std::string::npos;
    if (!watch) {
      if (++lists_ > 3) cancelled_ = true;
      r.body = parts_[0];
    } else if (++watches_ >= 3) {
      cancelled_ = true;
    }
    if (req.on_headers) req.on_headers(r.status, r.headers);
    if (watch) {
      for (auto chunk : ktrain::fuzz::chunks(parts_[1], parts_[2])) {
        if (!req.on_data(chunk)) {
          r.failure = ktrain::net::TransportFailure::kAborted;
          break;
        }
      }
    } else if (req.on_data) {
      if (!req.on_data(r.body)) r.failure = ktrain::net::TransportFailure::kAborted;
      r.body.clear();
    }
    return r;
  }
  std::vector<ktrain::net::Response> perform_all(
      const std::vector<ktrain::net::Request>& reqs) override {
    std::vector<ktrain::net::Response> out;
    for (const auto& r : reqs) out.push_back(perform(r));
    return out;
  }

 private:
  const std::vector<std::string>& parts_;
  bool& cancelled_;
  int lists_ = 0;
  int watches_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 3);
  ktrain::kube_test::TestEnv t;
  ktrain::kube_test::FakeProcessRunner runner;
  bool cancelled = false;
  FuzzApiServer server(parts, cancelled);
  try {
    ktrain::kube::Client client(ktrain::kube_test::token_config(), server, t.env, runner);
    ktrain::kube::WatchOptions opts;
    opts.label_selector = "ktrain.dev/run=r-1";
    opts.drop_keys = {"managedFields"};
    opts.cancelled = [&cancelled] { return cancelled; };
    opts.max_failures = 3;
    size_t seen = 0;
    ktrain::kube::WatchHandlers handlers;
    handlers.on_list = [&seen](std::vector<nlohmann::json>& items) { seen += items.size(); };
    handlers.on_event = [&seen](const std::string& type, nlohmann::json& object) {
      seen += type.size() + object.size();
    };
    ktrain::kube::list_watch(client, t.env, "/api/v1/namespaces/ml/pods", opts, handlers);
  } catch (const ktrain::Error&) {
  }
  return 0;
}
