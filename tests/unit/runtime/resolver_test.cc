#include "runtime/resolver.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

using namespace ktrain::launch;

TEST_CASE("resolver: resolv.conf search list, ndots and nameservers") {
  ResolvConf c = parse_resolv_conf(
      "# kubelet\nsearch ml.svc.cluster.local svc.cluster.local cluster.local\n"
      "nameserver 10.96.0.10\nnameserver not-an-ip\noptions ndots:5 timeout:1\n");
  CHECK(c.nameservers == std::vector<std::string>{"10.96.0.10"});
  CHECK(c.search.size() == 3);
  CHECK(c.ndots == 5);
  // A short name tries the search domains first, then itself.
  auto names = search_candidates("bert-0.bert", c);
  REQUIRE(names.size() == 4);
  CHECK(names[0] == "bert-0.bert.ml.svc.cluster.local");
  CHECK(names[3] == "bert-0.bert");
  // Enough dots: itself first. A trailing dot: only itself.
  ResolvConf one = parse_resolv_conf("search a.b\n");
  CHECK(search_candidates("x.y", one) == std::vector<std::string>{"x.y", "x.y.a.b"});
  CHECK(search_candidates("x.y.", one) == std::vector<std::string>{"x.y"});
}

TEST_CASE("resolver: /etc/hosts lookups are case-insensitive and skip comments") {
  const char* hosts =
      "127.0.0.1 localhost\n# 10.9.9.9 bert-0\n::1 ip6-localhost\n"
      "10.1.2.3   Bert-0.bert  bert-0   # pod\n";
  CHECK(lookup_hosts(hosts, "bert-0") == std::optional<std::string>("10.1.2.3"));
  CHECK(lookup_hosts(hosts, "BERT-0.BERT") == std::optional<std::string>("10.1.2.3"));
  CHECK_FALSE(lookup_hosts(hosts, "ip6-localhost"));
  CHECK_FALSE(lookup_hosts(hosts, "nothere"));
}

TEST_CASE("resolver: a malformed or foreign DNS response is not taken for an answer") {
  std::string q = build_dns_query(0x1234, "a.b");
  CHECK(parse_dns_response(q, 0x1234).rcode == -1);  // a query, not a response
  CHECK(parse_dns_response("xx", 0x1234).rcode == -1);
  std::string r = q;
  r[2] = char(0x81);
  r[3] = char(0x83);  // response, NXDOMAIN
  CHECK(parse_dns_response(r, 0x1234).rcode == 3);
  CHECK(parse_dns_response(r, 0x4321).rcode == -1);  // another query's id
}

namespace {
// A DNS server on 127.0.0.1 that knows one name.
class FakeDns {
 public:
  FakeDns(std::string name, std::string ip) : name_(std::move(name)), ip_(std::move(ip)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDns() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port = 0;
  std::atomic<int> queries{0};

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[512];
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 12) continue;
      ++queries;
      std::string q(buf, static_cast<size_t>(n));
      uint16_t id = uint16_t((uint8_t(q[0]) << 8) | uint8_t(q[1]));
      bool match = q == build_dns_query(id, name_);
      std::string r = q;
      r[2] = char(0x81);
      r[3] = char(match ? 0x80 : 0x83);
      if (match) {
        r[7] = 1;  // ANCOUNT
        r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04", 12);
        in_addr addr{};
        ::inet_pton(AF_INET, ip_.c_str(), &addr);
        r.append(reinterpret_cast<const char*>(&addr), 4);
      }
      ::sendto(fd_, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }
  std::string name_, ip_;
  int fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};
}  // namespace

TEST_CASE("resolver: a short service name resolves through the search domains over UDP") {
  FakeDns dns("bert-0.bert.ml.svc.cluster.local", "10.44.0.7");
  std::string dir = "/tmp/ktrain-resolver-" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/resolv.conf")
      << "search ml.svc.cluster.local svc.cluster.local\nnameserver 127.0.0.1\noptions ndots:5\n";
  std::ofstream(dir + "/hosts") << "127.0.0.1 localhost\n10.0.0.9 pinned\n";
  ResolverOptions o;
  o.hosts_path = dir + "/hosts";
  o.resolv_conf_path = dir + "/resolv.conf";
  o.dns_port = dns.port;
  o.timeout_ms = 2000;
  std::string error;
  CHECK(resolve_ipv4("bert-0.bert", error, o) == std::optional<std::string>("10.44.0.7"));
  CHECK(resolve_ipv4("pinned", error, o) == std::optional<std::string>("10.0.0.9"));
  CHECK(resolve_ipv4("10.1.1.1", error, o) == std::optional<std::string>("10.1.1.1"));
  CHECK_FALSE(resolve_ipv4("bert-1.bert", error, o));
  CHECK(error == "name not found");
  // Nobody answers: a plain reason, not a hang.
  o.dns_port = 9;  // discard: nothing listens on loopback
  o.timeout_ms = 200;
  o.attempts = 1;
  CHECK_FALSE(resolve_ipv4("bert-0.bert", error, o));
  CHECK(error == "no nameserver answered");
  std::remove((dir + "/resolv.conf").c_str());
  std::remove((dir + "/hosts").c_str());
  ::rmdir(dir.c_str());
}
