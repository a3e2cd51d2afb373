#pragma once
// Fakes for the cluster client's tests: files in memory, a clock that only moves when
// told, a scripted HTTP transport that records what it was asked, and a scripted
// process runner.

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "kube/kubeconfig.h"
#include "kube/process.h"
#include "net/http.h"

namespace ktrain::kube_test {

/// Files in a map.
class FakeFileSystem : public FileSystem {
 public:
  std::map<std::string, std::string> files;
  std::string read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) {
      throw Error("cannot read '" + path + "': No such file or directory", exit_code::kUsage);
    }
    return it->second;
  }
  void write_file(const std::string& path, const std::string& content) override {
    files[path] = content;
  }
  bool exists(const std::string& path) override { return files.count(path) > 0; }
  bool is_directory(const std::string&) override { return false; }
};

/// A clock that moves only when slept on or advanced.
class FakeClock : public Clock {
 public:
  std::chrono::system_clock::time_point wall =
      std::chrono::system_clock::from_time_t(1'800'000'000);  // 2027-01-15T08:00:00Z
  std::chrono::steady_clock::time_point mono{};
  std::chrono::system_clock::time_point now() override { return wall; }
  std::chrono::steady_clock::time_point steady_now() override { return mono; }
  void sleep_for(std::chrono::milliseconds d) override {
    wall += d;
    mono += d;
  }
};

/// Answers requests with a handler and records them.
class FakeTransport : public net::HttpTransport {
 public:
  using Handler = std::function<net::Response(const net::Request&)>;
  Handler handler;
  std::vector<net::Request> requests;
  std::mutex mu;
  int perform_all_calls = 0;

  net::Response perform(const net::Request& req) override {
    Handler h;
    {
      std::lock_guard<std::mutex> lock(mu);
      requests.push_back(req);
      h = handler;
    }
    net::Response r = h ? h(req) : net::Response{};
    if (req.on_headers) req.on_headers(r.status, r.headers);
    if (req.on_data && !r.body.empty()) {
      if (!req.on_data(r.body)) r.failure = net::TransportFailure::kAborted;
      r.body.clear();
    }
    return r;
  }
  std::vector<net::Response> perform_all(const std::vector<net::Request>& reqs) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++perform_all_calls;
    }
    std::vector<net::Response> out;
    for (const auto& r : reqs) out.push_back(perform(r));
    return out;
  }
};

/// A JSON response.
inline net::Response json_response(int status, const nlohmann::json& body) {
  net::Response r;
  r.status = status;
  r.body = body.dump();
  r.headers = {{"Content-Type", "application/json"}};
  return r;
}

/// A metav1.Status error response.
inline net::Response status_response(int code, const std::string& reason,
                                     const std::string& message, nlohmann::json causes = nullptr) {
  nlohmann::json s = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                      {"message", message}, {"reason", reason},   {"code", code}};
  if (!causes.is_null()) s["details"] = {{"causes", causes}};
  return json_response(code, s);
}

/// The path of a URL, without scheme, host and query.
inline std::string path_of(const std::string& url) {
  auto start = url.find("://");
  start = url.find('/', start == std::string::npos ? 0 : start + 3);
  if (start == std::string::npos) return "/";
  auto q = url.find('?', start);
  return url.substr(start, q == std::string::npos ? std::string::npos : q - start);
}

/// The value of query parameter `name` in `url` (still percent-encoded), or "".
inline std::string query_param(const std::string& url, const std::string& name) {
  auto q = url.find('?');
  if (q == std::string::npos) return "";
  std::string rest = url.substr(q + 1);
  std::stringstream ss(rest);
  std::string part;
  while (std::getline(ss, part, '&')) {
    auto eq = part.find('=');
    if (part.substr(0, eq) == name) return eq == std::string::npos ? "" : part.substr(eq + 1);
  }
  return "";
}

/// The value of header `name` of `req`, or "".
inline std::string header_of(const net::Request& req, const std::string& name) {
  for (const auto& [k, v] : req.headers) {
    if (k == name) return v;
  }
  return "";
}

/// Runs nothing: answers with scripted results and records the calls.
class FakeProcessRunner : public kube::ProcessRunner {
 public:
  struct Call {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
  };
  std::vector<Call> calls;
  std::deque<kube::ProcessResult> results;
  bool not_found = false;

  kube::ProcessResult run(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env) override {
    calls.push_back({argv, env});
    if (not_found) throw kube::ProgramNotFound("'" + argv[0] + "' was not found on PATH");
    if (results.empty()) return kube::ProcessResult{1, "", "no scripted result"};
    auto r = results.front();
    if (results.size() > 1) results.pop_front();
    return r;
  }
};

/// An Env over the fakes, with output captured.
struct TestEnv {
  FakeFileSystem fs;
  FakeClock clock;
  std::ostringstream out, err;
  std::istringstream in;
  Env env;
  TestEnv() {
    env.in = &in;
    env.out = &out;
    env.err = &err;
    env.fs = &fs;
    env.clock = &clock;
    env.vars["HOME"] = "/home/u";
    env.vars["PATH"] = "/usr/bin:/bin";
  }
};

/// A ClientConfig for https://api.test:6443 with a bearer token, namespace "ml".
inline kube::ClientConfig token_config(const std::string& token = "s3cret") {
  kube::ClientConfig c;
  c.source = "kubeconfig /home/u/.kube/config";
  c.context_name = "test";
  c.cluster_name = "test-cluster";
  c.user_name = "alice";
  c.namespace_ = "ml";
  c.cluster.server = "https://api.test:6443";
  c.cluster.ca_pem = "CA PEM";
  c.user.token = token;
  return c;
}

}  // namespace ktrain::kube_test
