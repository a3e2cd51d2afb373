// LeanHttp1 against local servers (test_servers.h): what it reads, how it fails, TLS.
#include "net/lean_http1.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "test_servers.h"

using namespace ktrain::net;
using namespace ktrain::net::testing;

namespace {

Request lean(const std::string& url) {
  Request r;
  r.url = url;
  r.lean = true;
  return r;
}

}  // namespace

TEST_CASE("lean: a GET returns status, headers and a body of known length") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  LeanHttp1 t("ktrain-test");
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

TEST_CASE("lean: a chunked stream hands over headers once, then the body as it arrives") {
  httplib::Server s;
  routes(s);
  Running<httplib::Server> srv(s);
  LeanHttp1 t("ktrain-test");
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

TEST_CASE("lean: chunks split at every byte, extensions, trailers and an interim answer") {
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
  LeanHttp1 t("ktrain-test");
  Response resp = t.perform(lean(raw.url()));
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.status == 200);
  CHECK(resp.body == "hello, world\r\nok");  // the second chunk holds a CRLF
}

TEST_CASE("lean: a body that runs until the connection closes") {
  RawServer raw([](int c) { send_text(c, "HTTP/1.0 200 OK\r\n\r\nall of it"); });
  LeanHttp1 t("ktrain-test");
  Response resp = t.perform(lean(raw.url()));
  CHECK(resp.failure == TransportFailure::kNone);
  CHECK(resp.http_version == "1.0");
  CHECK(resp.body == "all of it");
}

TEST_CASE("lean: connections closed too early are 'dropped', with what came before") {
  SUBCASE("in the middle of a body of known length") {
    RawServer raw(
        [](int c) { send_text(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial"); });
    LeanHttp1 t("ktrain-test");
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
    LeanHttp1 t("ktrain-test");
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
    LeanHttp1 t("ktrain-test");
    Response resp = t.perform(lean(raw.url()));
    CHECK(resp.failure == TransportFailure::kDropped);
    CHECK(resp.status == 0);
  }
}

TEST_CASE("lean: malformed answers fail and say why") {
  RawServer raw([](int c) {
    send_text(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnope\r\n");
  });
  LeanHttp1 t("ktrain-test");
  Response resp = t.perform(lean(raw.url()));
  CHECK(resp.failure == TransportFailure::kOther);
  CHECK(resp.failure_message.find("chunk size") != std::string::npos);
}

TEST_CASE("lean: the receiver stops a stream, or cancels it while it waits") {
  SUBCASE("on_data returning false") {
    httplib::Server s;
    routes(s);
    Running<httplib::Server> srv(s);
    LeanHttp1 t("ktrain-test");
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
    LeanHttp1 t("ktrain-test");
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
    LeanHttp1 t("ktrain-test");
    Request r = lean(raw.url());
    r.read_timeout = std::chrono::milliseconds(200);
    Response resp = t.perform(r);
    stop = true;
    CHECK(resp.failure == TransportFailure::kTimeout);
    CHECK(resp.body == "abc");
  }
}

TEST_CASE("lean: refused, unresolvable, and what it does not run") {
  LeanHttp1 t("ktrain-test");
  Request r = lean("http://127.0.0.1:" + std::to_string(closed_port()) + "/");
  Response resp = t.perform(r);
  CHECK(resp.failure == TransportFailure::kConnect);
  CHECK(describe_failure(resp, r.url).find("cannot connect to 127.0.0.1:") != std::string::npos);

  CHECK(t.perform(lean("http://no-such-host.invalid/")).failure == TransportFailure::kResolve);

  Request post = lean("http://127.0.0.1/");
  post.method = "POST";
  CHECK_FALSE(t.can_run(post));
  Request proxied = lean("http://127.0.0.1/");
  proxied.proxy = "http://proxy:3128";
  CHECK_FALSE(t.can_run(proxied));
  CHECK_FALSE(t.can_run(lean("ftp://127.0.0.1/")));
  CHECK_FALSE(t.can_run(lean("http://user:pw@127.0.0.1/")));
}

TEST_CASE("lean: many streams at once, each whole") {
  httplib::Server s;
  routes(s);
  s.new_task_queue = [] { return new httplib::ThreadPool(48); };
  Running<httplib::Server> srv(s);
  LeanHttp1 t("ktrain-test");
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

TEST_CASE("lean: TLS verification, a trusted CA, tls-server-name, insecure mode") {
  Cert cert("DNS:registry.test");
  httplib::SSLServer s(cert.cert().c_str(), cert.key().c_str());
  REQUIRE(s.is_valid());
  routes(s);
  Running<httplib::SSLServer> srv(s);
  LeanHttp1 t("ktrain-test");
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

TEST_CASE("lean: a client certificate for a server that asks for one") {
  Cert server_cert("IP:127.0.0.1");
  Cert client_cert("DNS:client.test");
  httplib::SSLServer s(server_cert.cert().c_str(), server_cert.key().c_str(),
                       client_cert.cert().c_str());
  REQUIRE(s.is_valid());
  routes(s);
  Running<httplib::SSLServer> srv(s);
  LeanHttp1 t("ktrain-test");
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
