// The real libcurl transport against local servers (test_servers.h).
#include "net/curl_transport.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "test_servers.h"

using namespace ktrain::net;
using namespace ktrain::net::testing;

TEST_CASE("curl: a GET returns status, headers and body") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  Request r;
  r.url = srv.url("http", "/hello");
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.status == 200);
  CHECK(resp.ok());
  CHECK(resp.body == "hello world");
  CHECK(resp.header("x-test") == "yes");
  CHECK(resp.http_version == "1.1");

  r.url = srv.url("http", "/missing");
  resp = t.perform(r);
  CHECK(resp.status == 404);
  CHECK_FALSE(resp.ok());
}

TEST_CASE("curl: headers are sent, bodies are sent from a string or streamed by offset") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  Request r;
  r.url = srv.url("http", "/auth");
  r.headers = {{"Authorization", "Bearer t0k"}};
  CHECK(t.perform(r).body == "Bearer t0k");

  Request post;
  post.method = "POST";
  post.url = srv.url("http", "/echo");
  post.body = "abc";
  CHECK(t.perform(post).body == "POST 3 abc");

  const std::string data(300000, 'z');
  Request put;
  put.method = "PUT";
  put.url = srv.url("http", "/echo");
  put.body_length = static_cast<std::int64_t>(data.size());
  put.body_reader = [&](std::uint64_t off, char* buf, std::size_t len) {
    std::size_t n = std::min<std::size_t>(len, data.size() - off);
    std::memcpy(buf, data.data() + off, n);
    return n;
  };
  Response resp = t.perform(put);
  CHECK(resp.status == 200);
  CHECK(resp.body == "PUT 300000 " + data);

  Request del;
  del.method = "DELETE";
  del.url = srv.url("http", "/echo");
  resp = t.perform(del);
  CHECK(resp.status == 202);
  CHECK(resp.body == "DELETE");
}

TEST_CASE("curl: a streamed body shorter than its length fails, it does not hang") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  const std::string data(100000, 'z');
  Request put;
  put.method = "PUT";
  put.url = srv.url("http", "/echo");
  put.body_length = static_cast<std::int64_t>(data.size()) + 5000;  // more than there is
  put.body_reader = [&](std::uint64_t off, char* buf, std::size_t len) {
    std::size_t n = std::min<std::size_t>(len, data.size() - off);
    std::memcpy(buf, data.data() + off, n);
    return n;
  };
  put.timeout = std::chrono::seconds(20);  // a hang shows as a timeout, not a stuck test
  Response resp = t.perform(put);
  CHECK(resp.failure == TransportFailure::kAborted);
  CHECK(resp.failure_message == "the request body ended after 100000 of 105000 bytes");
  // perform_all (the shared loop) too.
  auto all = t.perform_all({put, put});
  REQUIRE(all.size() == 2);
  CHECK(all[1].failure == TransportFailure::kAborted);
  CHECK(all[1].failure_message.find("ended after 100000 of 105000") != std::string::npos);
}

TEST_CASE("curl: streaming hands over headers once, then the body as it arrives") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  Request r;
  r.url = srv.url("http", "/stream");
  int header_calls = 0;
  std::string got;
  r.on_headers = [&](int status, const Headers&) {
    ++header_calls;
    CHECK(status == 200);
    CHECK(got.empty());
  };
  r.on_data = [&](std::string_view d) {
    got += d;
    return true;
  };
  Response resp = t.perform(r);
  CHECK(resp.status == 200);
  CHECK(header_calls == 1);
  CHECK(got == "line 0\nline 1\nline 2\nline 3\nline 4\n");
  CHECK(resp.body.empty());
}

TEST_CASE("curl: lean streams to a server known to speak HTTP/1.1") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  auto lean_get = [&](CurlTransport& t, size_t& largest) {
    Request r;
    r.url = srv.url("http", "/big");
    r.lean = true;
    std::string got;
    largest = 0;
    r.on_data = [&](std::string_view d) {
      largest = std::max(largest, d.size());
      got += d;
      return true;
    };
    Response resp = t.perform(r);
    CHECK(resp.status == 200);
    CHECK(resp.http_version == "1.1");
    return got;
  };
  size_t largest = 0;
  SUBCASE("on libcurl, they read 4 KiB at a time") {
    CurlTransport t;
    // The first: the server's protocol is not known yet (libcurl's own buffer).
    CHECK(lean_get(t, largest) == std::string(1 << 20, 'x'));
    // The next: it answered over HTTP/1.1, so the stream's receive buffer is small,
    // and nothing is lost for it.
    CHECK(lean_get(t, largest) == std::string(1 << 20, 'x'));
    CHECK(largest > 0);
    CHECK(largest <= 4096);
  }
}

TEST_CASE("curl: on_data returning false stops the transfer (aborted)") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  Request r;
  r.url = srv.url("http", "/big");
  r.on_data = [](std::string_view) { return false; };
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kAborted);
  CHECK(resp.status == 200);
}

TEST_CASE("curl: perform_all answers every request, in order") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  std::vector<Request> reqs(40);
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].url = srv.url("http", "/n/" + std::to_string(i));
  auto out = t.perform_all(reqs);
  REQUIRE(out.size() == reqs.size());
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].status == 200);
    CHECK(out[i].body == std::to_string(i));
  }
}

TEST_CASE("curl: start runs requests on the loop's thread and calls back with each answer") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  CurlTransport t;
  constexpr int kStreams = 24;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> bodies(kStreams);
  std::vector<Response> answers(kStreams);
  std::vector<std::thread::id> threads(kStreams);
  int done = 0;
  for (int i = 0; i < kStreams; ++i) {
    Request r;
    r.url = srv.url("http", i % 2 ? "/stream" : "/n/" + std::to_string(i));
    r.lean = true;
    if (i % 2) {
      r.on_data = [&bodies, i](std::string_view d) {
        bodies[i].append(d);
        return true;
      };
    }
    t.start(std::move(r), [&, i](Response resp) {
      std::lock_guard<std::mutex> lk(mu);
      answers[i] = std::move(resp);
      threads[i] = std::this_thread::get_id();
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lk(mu);
    REQUIRE(cv.wait_for(lk, std::chrono::seconds(30), [&] { return done == kStreams; }));
  }
  for (int i = 0; i < kStreams; ++i) {
    CAPTURE(i);
    CHECK(answers[i].failure == TransportFailure::kNone);
    CHECK(answers[i].status == 200);
    if (i % 2) {
      CHECK(bodies[i] == "line 0\nline 1\nline 2\nline 3\nline 4\n");
      CHECK(answers[i].body.empty());  // streamed: handed over, not kept
    } else {
      CHECK(answers[i].body == std::to_string(i));
    }
  }
  // Every answer came on one thread, the loop's: no thread per request.
  const bool one_thread = std::all_of(threads.begin(), threads.end(),
                                      [&](std::thread::id id) { return id == threads[0]; });
  CHECK(one_thread);
  CHECK(threads[0] != std::this_thread::get_id());

  // Stopped by its reader, and one that cannot be sent: each gets its answer too.
  Request big;
  big.url = srv.url("http", "/big");
  big.on_data = [](std::string_view) { return false; };
  Request bad;
  bad.url = srv.url("http", "/hello");
  bad.headers = {{"X-Injected", "a\r\nX-Evil: 1"}};
  std::vector<Response> ends;
  for (Request* r : {&big, &bad}) {
    t.start(*r, [&](Response resp) {
      std::lock_guard<std::mutex> lk(mu);
      ends.push_back(std::move(resp));
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lk(mu);
  REQUIRE(cv.wait_for(lk, std::chrono::seconds(30), [&] { return ends.size() == 2; }));
  const bool aborted = std::any_of(ends.begin(), ends.end(), [](const Response& r) {
    return r.failure == TransportFailure::kAborted && r.status == 200;
  });
  const bool not_sent = std::any_of(ends.begin(), ends.end(), [](const Response& r) {
    return r.failure == TransportFailure::kNotSent && r.status == 0;
  });
  CHECK(aborted);
  CHECK(not_sent);
}

TEST_CASE("curl: connection refused is classified and described in plain words") {
  CurlTransport t;
  Request r;
  r.url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v2/";
  Response resp = t.perform(r);
  CHECK(resp.status == 0);
  CHECK(resp.failure == TransportFailure::kConnect);
  CHECK(describe_failure(resp, r.url).find("cannot connect to 127.0.0.1:") != std::string::npos);
  CHECK_THROWS_AS(throw_if_failed(resp, r.url), TransportError);
}

TEST_CASE("curl: a connection closed in the middle of a response is 'dropped'") {
  RawServer raw(
      [](int c) { send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial"); });
  CurlTransport t;
  Request r;
  r.url = raw.url();
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kDropped);
}

TEST_CASE("curl: TLS verification failure, a trusted CA, and tls-server-name") {
  Cert cert("DNS:registry.test");
  httplib::SSLServer s(cert.cert().c_str(), cert.key().c_str());
  REQUIRE(s.is_valid());
  routes(s);
  Running<httplib::SSLServer> srv(s);
  CurlTransport t;
  Request r;
  r.url = srv.url("https", "/hello");
  r.tls.ca_pem = "";  // the system trust store does not know this certificate

  SUBCASE("an unknown certificate authority fails as TLS") {
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTls);
    CHECK(describe_failure(resp, r.url).find("TLS with 127.0.0.1:") != std::string::npos);
  }
  SUBCASE("a trusted CA but the wrong name still fails") {
    r.tls.ca_pem = cert.pem;
    CHECK(t.perform(r).failure == TransportFailure::kTls);
  }
  SUBCASE("a trusted CA and the certificate's name as tls-server-name succeed") {
    r.tls.ca_pem = cert.pem;
    r.tls.server_name = "registry.test";
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kNone);
    CHECK(resp.body == "hello world");
  }
  SUBCASE("a CA file works like CA data") {
    r.tls.ca_file = cert.cert();
    r.tls.server_name = "registry.test";
    CHECK(t.perform(r).status == 200);
  }
  SUBCASE("insecure mode skips verification") {
    r.tls.insecure_skip_verify = true;
    CHECK(t.perform(r).status == 200);
  }
}

namespace {

/// A server whose /count answers with how many requests reached it, and whose
/// /endless streams 64 KiB chunks (8 MiB at most) without a length.
struct CountingServer {
  httplib::Server s;
  std::atomic<int> requests{0};
  CountingServer() {
    s.set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
      ++requests;
      return httplib::Server::HandlerResponse::Unhandled;
    });
    routes(s);
    s.Get("/endless", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
        const std::string chunk(64 * 1024, 'x');
        for (int i = 0; i < 128; ++i) {
          if (!sink.write(chunk.data(), chunk.size())) return false;
        }
        sink.done();
        return true;
      });
    });
  }
};

}  // namespace

TEST_CASE("curl: an answer longer than max_body_bytes fails as too large, none of it kept") {
  CHECK(Request{}.max_body_bytes == std::size_t{256} << 20);
  CountingServer cs;
  Running<httplib::Server> srv(cs.s);
  CurlTransport t;
  Request r;
  r.max_body_bytes = 64 * 1024;
  for (const char* path : {"/big", "/endless"}) {  // by its Content-Length; as it arrives
    CAPTURE(path);
    r.url = srv.url("http", path);
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTooLarge);
    CHECK(resp.status == 200);
    CHECK(resp.body.empty());
    CHECK(describe_failure(resp, r.url) == "the answer from 127.0.0.1:" + std::to_string(srv.port) +
                                               " is too large to read whole (more than 64 KiB)");
    try {
      throw_if_failed(resp, r.url);
      FAIL("expected an error");
    } catch (const TransportError& e) {
      CHECK(e.exit_status() == 1);  // the server answered, wrongly
    }
  }
  r.url = srv.url("http", "/big");
  r.max_body_bytes = 1 << 20;  // exactly its length
  Response whole = t.perform(r);
  CHECK(whole.failure == TransportFailure::kNone);
  CHECK(whole.body.size() == std::size_t{1} << 20);
  r.max_body_bytes = 1024;  // a streamed answer has no such limit here
  std::size_t streamed = 0;
  r.on_data = [&](std::string_view d) {
    streamed += d.size();
    return true;
  };
  CHECK(t.perform(r).failure == TransportFailure::kNone);
  CHECK(streamed == std::size_t{1} << 20);
}

TEST_CASE("curl: a header with CR, LF or NUL is not sent; it does not become two") {
  CountingServer cs;
  Running<httplib::Server> srv(cs.s);
  CurlTransport t;
  const std::vector<Headers> bad = {
      {{"Authorization", "Bearer abc.s3cr3t\r\nX-Injected: 1"}},
      {{"Authorization", "Bearer abc.s3cr3t\nX-Injected: 1"}},
      {{"Authorization", std::string("Bearer abc.s3cr3t\0", 18)}},
      {{"X-Injected: 1\r\nAuthorization", "x"}},
  };
  for (const auto& headers : bad) {
    Request r;
    r.url = srv.url("http", "/auth");
    r.headers = headers;
    Response resp = t.perform(r);
    CHECK(resp.failure != TransportFailure::kNone);
    CHECK(resp.status == 0);
    const std::string why = describe_failure(resp, r.url);
    CHECK(why.find("was not sent") != std::string::npos);
    CHECK(why.find("s3cr3t") == std::string::npos);
  }
  CHECK(cs.requests == 0);

  std::vector<Request> reqs(3);
  for (auto& r : reqs) r.url = srv.url("http", "/auth");
  reqs[0].headers = {{"Authorization", "Bearer good"}};
  reqs[1].headers = {{"Authorization", "Bearer bad\r\nX: 1"}};
  reqs[2].headers = {{"Authorization", "Bearer also-good"}};
  auto out = t.perform_all(reqs);
  REQUIRE(out.size() == 3);
  CHECK(out[0].body == "Bearer good");
  CHECK(out[1].failure != TransportFailure::kNone);
  CHECK(describe_failure(out[1], reqs[1].url) ==
        "the request to 127.0.0.1:" + std::to_string(srv.port) +
            " was not sent (the value of the Authorization header holds a line break (CR or LF) "
            "or NUL)");
  CHECK(out[2].body == "Bearer also-good");
  CHECK(cs.requests == 2);
}

TEST_CASE("curl: redirects stay on HTTP(S), never go down to HTTP, and lose credentials") {
  // Where redirects lead: another port is another origin, as another host would be.
  httplib::Server other;
  routes(other);
  Running<httplib::Server> to(other);
  httplib::Server s;
  routes(s);
  s.Get(R"(/go/(.*))", [&](const httplib::Request& req, httplib::Response& res) {
    const std::string where = req.matches[1].str();
    res.status = 307;
    if (where == "same") res.set_header("Location", "/auth");
    if (where == "other") res.set_header("Location", to.url("http", "/auth"));
    if (where == "file") res.set_header("Location", "file:///etc/passwd");
    if (where == "ftp") res.set_header("Location", "ftp://127.0.0.1/x");
  });
  Running<httplib::Server> srv(s);
  CurlTransport t;
  Request r;
  r.follow_redirects = true;
  r.headers = {{"Authorization", "Bearer s3cr3t"}};

  r.url = srv.url("http", "/go/same");
  Response same = t.perform(r);
  CHECK(same.status == 200);
  CHECK(same.body == "Bearer s3cr3t");  // the same origin keeps them

  r.url = srv.url("http", "/go/other");
  Response moved = t.perform(r);
  CHECK(moved.status == 200);
  CHECK(moved.body.empty());  // the other origin saw no Authorization

  for (const char* where : {"file", "ftp"}) {
    CAPTURE(where);
    r.url = srv.url("http", std::string("/go/") + where);
    Response refused = t.perform(r);
    CHECK(refused.failure == TransportFailure::kRedirect);
    CHECK(refused.status == 0);
    CHECK(describe_failure(refused, r.url) ==
          "127.0.0.1:" + std::to_string(srv.port) +
              " redirected to a URL that is not HTTP or HTTPS, which ktrain does not follow");
    try {
      throw_if_failed(refused, r.url);
      FAIL("expected an error");
    } catch (const TransportError& e) {
      CHECK(e.exit_status() == 1);  // the server answered, wrongly
    }
  }

  // From HTTPS, a redirect to plain HTTP is refused.
  Cert cert("IP:127.0.0.1");
  httplib::SSLServer tls(cert.cert().c_str(), cert.key().c_str());
  REQUIRE(tls.is_valid());
  tls.Get("/down", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 302;
    res.set_header("Location", to.url("http", "/auth"));
  });
  tls.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello world", "text/plain");
  });
  tls.Get("/up", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 302;
    res.set_header("Location", "/hello");
  });
  Running<httplib::SSLServer> secure(tls);
  r.tls.ca_pem = cert.pem;
  r.url = secure.url("https", "/up");
  CHECK(t.perform(r).body == "hello world");  // HTTPS to HTTPS is followed
  r.url = secure.url("https", "/down");
  Response down = t.perform(r);
  CHECK(down.status == 0);
  CHECK(describe_failure(down, r.url).find("redirected to a URL that is not HTTPS") !=
        std::string::npos);

  // Without follow_redirects the redirect itself is the answer.
  r.follow_redirects = false;
  r.tls = {};
  r.url = srv.url("http", "/go/file");
  CHECK(t.perform(r).status == 307);
}
