#include "runtime/resolver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "runtime/net.h"
#include "runtime/read_file.h"
#include "runtime/sha256.h"

namespace ktrain::launch {
namespace {

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  }
  return out;
}

bool read_file(const std::string& path, std::string& out) {
  auto text = read_regular_file(path, std::size_t{64} << 20);
  if (!text) return false;
  out = std::move(*text);
  return true;
}

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

template <typename F>
void for_each_line(std::string_view text, F f) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (size_t hash = line.find_first_of("#;"); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    f(line);
    pos = nl + 1;
  }
}

// Skips a (possibly compressed) name at `pos`; returns false when malformed.
bool skip_name(std::string_view p, size_t& pos) {
  while (pos < p.size()) {
    auto len = static_cast<unsigned char>(p[pos]);
    if (len == 0) {
      ++pos;
      return true;
    }
    if ((len & 0xc0) == 0xc0) {
      pos += 2;
      return pos <= p.size();
    }
    pos += 1 + len;
  }
  return false;
}

uint16_t u16(std::string_view p, size_t pos) {
  return uint16_t((static_cast<unsigned char>(p[pos]) << 8) |
                  static_cast<unsigned char>(p[pos + 1]));
}

// One query to one nameserver; returns the parsed answer (rcode -1 on timeout).
DnsAnswer query(const std::string& server, int port, const std::string& fqdn, int timeout_ms) {
  DnsAnswer none;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, server.c_str(), &addr.sin_addr) != 1) return none;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return none;
  std::string id_bytes = random_bytes(2);
  uint16_t id = uint16_t((static_cast<unsigned char>(id_bytes[0]) << 8) |
                         static_cast<unsigned char>(id_bytes[1]));
  std::string q = build_dns_query(id, fqdn);
  // connect() so that only the nameserver's own replies are received.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::send(fd, q.data(), q.size(), 0) < 0) {
    ::close(fd);
    return none;
  }
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // e.g. ECONNREFUSED: nothing listens there
    DnsAnswer a = parse_dns_response(std::string_view(buf, static_cast<size_t>(n)), id);
    if (a.rcode >= 0) {
      ::close(fd);
      return a;
    }
  }
  ::close(fd);
  return none;
}

}  // namespace

ResolvConf parse_resolv_conf(std::string_view text) {
  ResolvConf c;
  for_each_line(text, [&](std::string_view line) {
    auto w = words(line);
    if (w.empty()) return;
    if (w[0] == "nameserver" && w.size() >= 2 && is_ipv4(w[1])) {
      c.nameservers.push_back(w[1]);
    } else if ((w[0] == "search" || w[0] == "domain") && w.size() >= 2) {
      c.search.assign(w.begin() + 1, w.end());
    } else if (w[0] == "options") {
      for (size_t i = 1; i < w.size(); ++i) {
        if (w[i].rfind("ndots:", 0) == 0) {
          int n = std::atoi(w[i].c_str() + 6);
          c.ndots = n < 0 ? 0 : (n > 15 ? 15 : n);
        }
      }
    }
  });
  return c;
}

std::optional<std::string> lookup_hosts(std::string_view text, std::string_view name) {
  std::string want = lower(name);
  std::optional<std::string> found;
  for_each_line(text, [&](std::string_view line) {
    if (found) return;
    auto w = words(line);
    if (w.size() < 2 || !is_ipv4(w[0])) return;
    for (size_t i = 1; i < w.size(); ++i) {
      if (lower(w[i]) == want) {
        found = w[0];
        return;
      }
    }
  });
  return found;
}

std::vector<std::string> search_candidates(const std::string& name, const ResolvConf& conf) {
  if (!name.empty() && name.back() == '.') return {name.substr(0, name.size() - 1)};
  int dots = 0;
  for (char c : name) dots += (c == '.');
  std::vector<std::string> out;
  if (dots >= conf.ndots) out.push_back(name);
  for (const auto& domain : conf.search) out.push_back(name + "." + domain);
  if (dots < conf.ndots) out.push_back(name);
  return out;
}

std::string build_dns_query(uint16_t id, const std::string& fqdn) {
  std::string q;
  q += char(id >> 8);
  q += char(id & 0xff);
  q += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);  // RD, QDCOUNT=1
  size_t start = 0;
  while (start < fqdn.size()) {
    size_t dot = fqdn.find('.', start);
    if (dot == std::string::npos) dot = fqdn.size();
    size_t len = std::min<size_t>(dot - start, 63);
    q += char(len);
    q += fqdn.substr(start, len);
    start = dot + 1;
  }
  q += '\0';
  q += std::string("\x00\x01\x00\x01", 4);  // QTYPE A, QCLASS IN
  return q;
}

DnsAnswer parse_dns_response(std::string_view p, uint16_t id) {
  DnsAnswer a;
  if (p.size() < 12 || u16(p, 0) != id) return a;
  uint16_t flags = u16(p, 2);
  if (!(flags & 0x8000)) return a;  // not a response
  uint16_t qd = u16(p, 4), an = u16(p, 6);
  size_t pos = 12;
  for (int i = 0; i < qd; ++i) {
    if (!skip_name(p, pos) || pos + 4 > p.size()) return a;
    pos += 4;
  }
  DnsAnswer out;
  out.rcode = flags & 0x0f;
  for (int i = 0; i < an; ++i) {
    if (!skip_name(p, pos) || pos + 10 > p.size()) return a;
    uint16_t type = u16(p, pos), cls = u16(p, pos + 2), rdlen = u16(p, pos + 8);
    pos += 10;
    if (pos + rdlen > p.size()) return a;
    if (type == 1 && cls == 1 && rdlen == 4) {
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, p.data() + pos, buf, sizeof buf);
      out.addresses.emplace_back(buf);
    }
    pos += rdlen;
  }
  return out;
}

std::optional<std::string> resolve_ipv4(const std::string& name, std::string& error,
                                        const ResolverOptions& options) {
  if (is_ipv4(name)) return name;
  if (lower(name) == "localhost") return std::string("127.0.0.1");
  std::string text;
  if (read_file(options.hosts_path, text)) {
    if (auto ip = lookup_hosts(text, name)) return ip;
  }
  ResolvConf conf;
  if (read_file(options.resolv_conf_path, text)) conf = parse_resolv_conf(text);
  if (conf.nameservers.empty()) conf.nameservers.push_back("127.0.0.1");
  bool any_answer = false;
  for (const auto& fqdn : search_candidates(name, conf)) {
    for (int attempt = 0; attempt < options.attempts; ++attempt) {
      bool answered = false;
      for (const auto& server : conf.nameservers) {
        DnsAnswer a = query(server, options.dns_port, fqdn, options.timeout_ms);
        if (a.rcode < 0) continue;
        answered = any_answer = true;
        if (a.rcode == 0 && !a.addresses.empty()) return a.addresses.front();
        break;  // NXDOMAIN or no A record: try the next candidate name
      }
      if (answered) break;
    }
  }
  error = any_answer ? "name not found" : "no nameserver answered";
  return std::nullopt;
}

}  // namespace ktrain::launch
