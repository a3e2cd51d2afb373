// Http1Client against local servers (test_servers.h): what it reads, how it fails,
// TLS, kept-alive connections.
#include "net/http1_client.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "test_servers.h"

using namespace ktrain::net;
using namespace ktrain::net::testing;

namespace {

Http1Options options(std::size_t connections = 8) {
  Http1Options o;
  o.user_agent = "ktrain-test";
  o.max_host_connections = connections;
  return o;
}

Request lean(const std::string& url) {
  Request r;
  r.url = url;
  r.lean = true;
  return r;
}

}  // namespace

TEST_CASE("http1: a GET returns status, headers and a body of known length") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  Request r = lean(srv.url("http", "/hello"));
  REQUIRE(t.can_run(r));
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.status == 200);
  CHECK(resp.http_version == "1.1");
  CHECK(resp.header("x-test") == "yes");
  CHECK(resp.body == "hello world");

  r = lean(srv.url("http", "/auth"));
  r.headers = {{"Authorization", "Bearer abc"}};
  CHECK(t.perform(r).body == "Bearer abc");
  CHECK(t.perform(lean(srv.url("http", "/big"))).body == std::string(1 << 20, 'x'));
}

TEST_CASE("http1: a chunked stream hands over headers once, then the body as it arrives") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  Request r = lean(srv.url("http", "/stream"));
  int header_calls = 0, status_seen = 0;
  std::string got;
  r.on_headers = [&](int status, const Headers&) {
    ++header_calls;
    status_seen = status;
    CHECK(got.empty());
  };
  r.on_data = [&](std::string_view d) {
    got += d;
    return true;
  };
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(header_calls == 1);
  CHECK(status_seen == 200);
  CHECK(got == "line 0\nline 1\nline 2\nline 3\nline 4\n");
  CHECK(resp.body.empty());
}

TEST_CASE("http1: chunks split at every byte, extensions, trailers and an interim answer") {
  RawServer raw([](int c) {
    const std::string reply =
        "HTTP/1.1 100 Continue\r\n\r\n"
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5;ext=1\r\nhello\r\nB\r\n, world\r\nok\r\n0\r\nX-Trailer: t\r\n\r\n";
    for (char ch : reply) {
      send_text(c, std::string(1, ch));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  Http1Client t(options());
  Response resp = t.perform(lean(raw.url()));
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.status == 200);
  CHECK(resp.body == "hello, world\r\nok");  // the second chunk holds a CRLF
}

TEST_CASE("http1: a body that runs until the connection closes") {
  RawServer raw([](int c) { send_text(c, "HTTP/1.0 200 OK\r\n\r\nall of it"); });
  Http1Client t(options());
  Response resp = t.perform(lean(raw.url()));
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.http_version == "1.0");
  CHECK(resp.body == "all of it");
}

TEST_CASE("http1: connections closed too early are 'dropped', with what came before") {
  SUBCASE("in the middle of a body of known length") {
    RawServer raw(
        [](int c) { send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial"); });
    Http1Client t(options());
    Response resp = t.perform(lean(raw.url()));
    CHECK(resp.failure == TransportFailure::kDropped);
    CHECK(resp.status == 200);
    CHECK(resp.body == "partial");
    CHECK(describe_failure(resp, raw.url()).find("closed before the response was complete") !=
          std::string::npos);
  }
  SUBCASE("inside a chunk") {
    RawServer raw([](int c) {
      send_text(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nline one\nline");
    });
    Http1Client t(options());
    Request r = lean(raw.url());
    std::string got;
    r.on_data = [&](std::string_view d) {
      got += d;
      return true;
    };
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kDropped);
    CHECK(got == "line one\nline");
  }
  SUBCASE("before any answer") {
    RawServer raw([](int) {});
    Http1Client t(options());
    Response resp = t.perform(lean(raw.url()));
    CHECK(resp.failure == TransportFailure::kDropped);
    CHECK(resp.status == 0);
  }
}

TEST_CASE("http1: malformed answers fail and say why") {
  struct Case {
    std::string answer, words;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnope\r\n", "chunk size"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\nbody", "Content-Length"},
      {"SSH-2.0-OpenSSH_9.2\r\n\r\n", "not an HTTP/1.x answer"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "status line"},
      {"HTTP/1.1 200 OK\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n", "64 KiB"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.words);
    RawServer raw([&](int fd) { send_text(fd, c.answer); });
    Http1Client t(options());
    Response resp = t.perform(lean(raw.url()));
    CHECK(resp.failure == TransportFailure::kOther);
    CHECK(resp.failure_message.find(c.words) != std::string::npos);
  }
}

TEST_CASE("http1: the receiver stops a stream, or cancels it while it waits") {
  SUBCASE("on_data returning false") {
    httplib::Server s;
    routes(s);
    Running<httplib::Server> srv(s);
    Http1Client t(options());
    Request r = lean(srv.url("http", "/big"));
    r.on_data = [](std::string_view) { return false; };
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kAborted);
    CHECK(resp.status == 200);
  }
  SUBCASE("cancelled() while no data comes") {
    std::atomic<bool> stop{false};
    RawServer raw([&](int c) {
      send_text(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    Http1Client t(options());
    Request r = lean(raw.url());
    const auto began = std::chrono::steady_clock::now();
    r.cancelled = [&] {
      return std::chrono::steady_clock::now() - began > std::chrono::milliseconds(150);
    };
    Response resp = t.perform(r);
    stop = true;
    CHECK(resp.failure == TransportFailure::kAborted);
  }
  SUBCASE("a read timeout") {
    std::atomic<bool> stop{false};
    RawServer raw([&](int c) {
      send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
      while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    Http1Client t(options());
    Request r = lean(raw.url());
    r.read_timeout = std::chrono::milliseconds(200);
    Response resp = t.perform(r);
    stop = true;
    CHECK(resp.failure == TransportFailure::kTimeout);
    CHECK(resp.body == "abc");
  }
}

TEST_CASE("http1: refused, unresolvable, and what it does not run") {
  Http1Client t(options());
  Request r = lean("http://127.0.0.1:" + std::to_string(closed_port()) + "/");
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kConnect);
  CHECK(describe_failure(resp, r.url).find("cannot connect to 127.0.0.1:") != std::string::npos);

  CHECK(t.perform(lean("http://no-such-host.invalid/")).failure == TransportFailure::kResolve);

  Request upload = lean("http://127.0.0.1/");
  upload.method = "PUT";
  upload.body_reader = [](std::uint64_t, char*, std::size_t) -> std::size_t { return 0; };
  CHECK_FALSE(t.can_run(upload));
  Request redirected = lean("http://127.0.0.1/");
  redirected.follow_redirects = true;
  CHECK_FALSE(t.can_run(redirected));
  Request proxied = lean("http://127.0.0.1/");
  proxied.proxy = "http://proxy:3128";
  CHECK_FALSE(t.can_run(proxied));
  CHECK_FALSE(t.can_run(lean("ftp://127.0.0.1/")));
  CHECK_FALSE(t.can_run(lean("http://user:pw@127.0.0.1/")));
}

TEST_CASE("http1: many streams at once, each whole") {
  httplib::Server s;
  routes(s);
  s.new_task_queue = [] { return new httplib::ThreadPool(48); };
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  std::vector<std::thread> threads;
  std::vector<std::string> got(40);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      got[i] = t.perform(lean(srv.url("http", i % 2 ? "/big" : "/n/" + std::to_string(i)))).body;
    });
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i] == (i % 2 ? std::string(1 << 20, 'x') : std::to_string(i)));
  }
}

TEST_CASE("http1: TLS verification, a trusted CA, tls-server-name, insecure mode") {
  Cert cert("DNS:registry.test");
  httplib::SSLServer s(cert.cert().c_str(), cert.key().c_str());
  REQUIRE(s.is_valid());
  routes(s);
  Running<httplib::SSLServer> srv(s);
  Http1Client t(options());
  Request r = lean(srv.url("https", "/hello"));

  SUBCASE("an unknown certificate authority fails as TLS") {
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTls);
    CHECK(resp.failure_message.find("certificate") != std::string::npos);
  }
  SUBCASE("a trusted CA but the wrong name still fails") {
    r.tls.ca_pem = cert.pem;
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTls);
    CHECK(resp.failure_message.find("mismatch") != std::string::npos);
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
  SUBCASE("CA data that holds no certificate") {
    r.tls.ca_pem = "not a certificate";
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTls);
    CHECK(resp.failure_message.find("no PEM certificate") != std::string::npos);
  }
  SUBCASE("insecure mode skips verification") {
    r.tls.insecure_skip_verify = true;
    Response resp = t.perform(r);
    CHECK(resp.status == 200);
    CHECK(resp.body == "hello world");
  }
}

TEST_CASE("http1: a client certificate for a server that asks for one") {
  Cert server_cert("IP:127.0.0.1");
  Cert client_cert("DNS:client.test");
  httplib::SSLServer s(server_cert.cert().c_str(), server_cert.key().c_str(),
                       client_cert.cert().c_str());
  REQUIRE(s.is_valid());
  routes(s);
  Running<httplib::SSLServer> srv(s);
  Http1Client t(options());
  Request r = lean(srv.url("https", "/hello"));
  r.tls.ca_pem = server_cert.pem;  // and the name is checked against the IP address
  SUBCASE("with it") {
    r.tls.client_cert_pem = client_cert.pem;
    r.tls.client_key_pem = slurp(client_cert.key());
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kNone);
    CHECK(resp.body == "hello world");
  }
  SUBCASE("without it") {
    CHECK(t.perform(r).status != 200);
  }
}

TEST_CASE("http1: requests with bodies, HEAD, and one kept-alive connection for them all") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  auto send = [&](const std::string& method, const std::string& body) {
    Request r;
    r.method = method;
    r.url = srv.url("http", "/echo");
    r.body = body;
    r.headers = {{"Content-Type", "application/json"}};
    return t.perform(r);
  };
  CHECK(send("POST", "{\"a\":1}").body == "POST 7 {\"a\":1}");
  CHECK(send("PUT", std::string(100000, 'p')).body == "PUT 100000 " + std::string(100000, 'p'));
  CHECK(send("PATCH", "x").body == "PATCH 1 x");
  Response del = send("DELETE", "");
  CHECK(del.status == 202);
  CHECK(del.body == "DELETE");

  Request head;
  head.method = "HEAD";
  head.url = srv.url("http", "/hello");
  Response h = t.perform(head);
  CHECK(h.status == 200);
  CHECK(h.header("Content-Length") == "11");
  CHECK(h.body.empty());

  // Every request so far, and these, went over the same connection.
  Request port;
  port.url = srv.url("http", "/port");
  const std::string first = t.perform(port).body;
  CHECK_FALSE(first.empty());
  CHECK(t.perform(port).body == first);
  CHECK(t.perform(head).status == 200);
  CHECK(t.perform(port).body == first);
}

TEST_CASE("http1: an answer with Connection: close closes its connection") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  Request r;
  r.url = srv.url("http", "/close-port");
  const std::string a = t.perform(r).body, b = t.perform(r).body;
  CHECK_FALSE(a.empty());
  CHECK(a != b);
}

TEST_CASE("http1: perform_all answers every request in order, over at most N connections") {
  httplib::Server s;
  routes(s);
  std::atomic<int> in_flight{0}, most{0};
  s.Get(R"(/slow/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    const int now = ++in_flight;
    for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --in_flight;
    res.set_content(req.matches[1].str() + " " + std::to_string(req.remote_port), "text/plain");
  });
  s.set_keep_alive_max_count(1000);
  s.new_task_queue = [] { return new httplib::ThreadPool(16); };
  Running<httplib::Server> srv(s);
  Http1Client t(options(3));
  std::vector<Request> reqs(60);
  std::vector<const Request*> ptrs;
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].url = srv.url("http", "/slow/" + std::to_string(i));
    ptrs.push_back(&reqs[i]);
  }
  auto out = t.perform_all(ptrs);
  REQUIRE(out.size() == reqs.size());
  std::set<std::string> ports;
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].status == 200);
    const std::string& b = out[i].body;
    CHECK(b.substr(0, b.find(' ')) == std::to_string(i));
    ports.insert(b.substr(b.find(' ') + 1));
  }
  CHECK(most.load() > 1);    // concurrently,
  CHECK(most.load() <= 3);   // but on three connections at most,
  CHECK(ports.size() <= 3);  // kept alive for all sixty
  // A request that cannot go out does not hold up the others.
  reqs[5].url = "http://no-such-host.invalid/";
  out = t.perform_all(ptrs);
  CHECK(out[5].failure == TransportFailure::kResolve);
  CHECK(out[4].body.substr(0, 2) == "4 ");
  CHECK(out[6].body.substr(0, 2) == "6 ");
}

TEST_CASE("http1: a request that meets a kept-alive connection the server closed is resent") {
  RawServer raw(std::vector<std::function<void(int)>>{
      [](int c) {
        send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
        char buf[4096];
        [[maybe_unused]] auto n = ::read(c, buf, sizeof buf);  // the second request
        // ... which it closes on without an answer, as a server timing out an idle
        // connection just then does.
      },
      [](int c) { send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"); },
  });
  Http1Client t(options());
  Request r;
  r.url = raw.url();
  CHECK(t.perform(r).body == "a");
  Response second = t.perform(r);
  CHECK(second.failure == TransportFailure::kNone);
  CHECK(second.body == "b");
}

TEST_CASE("http1: a new connection closed before any answer is not resent") {
  RawServer raw([](int) {});
  Http1Client t(options());
  Request r;
  r.method = "POST";
  r.body = "once";
  r.url = raw.url();
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kDropped);
}

TEST_CASE("http1: an answer longer than max_body_bytes fails as too large; streams do not") {
  httplib::Server s;
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
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  for (const char* path : {"/big", "/endless"}) {  // by its Content-Length; as it arrives
    CAPTURE(path);
    Request r = lean(srv.url("http", path));
    r.max_body_bytes = 64 * 1024;
    Response resp = t.perform(r);
    CHECK(resp.failure == TransportFailure::kTooLarge);
    CHECK(resp.failure_message == "more than 64 KiB");
    CHECK(resp.status == 200);
    CHECK(resp.body.empty());
  }
  Request whole = lean(srv.url("http", "/big"));
  whole.max_body_bytes = 1 << 20;
  CHECK(t.perform(whole).body.size() == std::size_t{1} << 20);
  Request streamed = lean(srv.url("http", "/endless"));
  streamed.max_body_bytes = 1024;
  std::size_t n = 0;
  streamed.on_data = [&](std::string_view d) {
    n += d.size();
    return true;
  };
  CHECK(t.perform(streamed).failure == TransportFailure::kNone);
  CHECK(n == std::size_t{8} << 20);
}

TEST_CASE("http1: a header with CR, LF or NUL is not sent") {
  std::atomic<int> requests{0};
  httplib::Server s;
  s.set_pre_routing_handler([&](const httplib::Request&, httplib::Response&) {
    ++requests;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  routes(s);
  Running<httplib::Server> srv(s);
  Http1Client t(options());
  Request r = lean(srv.url("http", "/auth"));
  r.headers = {{"Authorization", "Bearer abc.s3cr3t\r\nX-Injected: 1"}};
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kNotSent);
  CHECK(resp.failure_message ==
        "the value of the Authorization header holds a line break (CR or LF) or NUL");
  r.headers = {{"Authorization", "Bearer fine"}};
  r.url = srv.url("http", "/auth\r\nX-Injected: 1");
  CHECK(t.perform(r).failure == TransportFailure::kNotSent);
  CHECK(requests == 0);
}
