#pragma once
// A small IPv4 name resolver for the static launcher (static glibc cannot load
// NSS modules): numeric addresses, /etc/hosts, then DNS over UDP to the
// nameservers of /etc/resolv.conf, honouring its search list and ndots, so that
// the short name `<run>-0.<run>` of a headless Service resolves inside a pod.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktrain::launch {

/// What /etc/resolv.conf says.
struct ResolvConf {
  std::vector<std::string> nameservers;
  std::vector<std::string> search;
  int ndots = 1;
};

/// Where the resolver looks; tests point these at their own files and port.
struct ResolverOptions {
  std::string hosts_path = "/etc/hosts";
  std::string resolv_conf_path = "/etc/resolv.conf";
  int dns_port = 53;
  int timeout_ms = 1500;  ///< per query and nameserver
  int attempts = 2;
};

/// Parses resolv.conf text (nameserver, search, domain, options ndots:N).
ResolvConf parse_resolv_conf(std::string_view text);

/// Looks `name` up in hosts-file text; returns the first IPv4 address.
std::optional<std::string> lookup_hosts(std::string_view text, std::string_view name);

/// The fully qualified names to try for `name`, in order (resolv.conf rules).
std::vector<std::string> search_candidates(const std::string& name, const ResolvConf& conf);

/// Builds a DNS query for the A record of `fqdn`.
std::string build_dns_query(uint16_t id, const std::string& fqdn);

/// Result of parsing a DNS response.
struct DnsAnswer {
  int rcode = -1;                      ///< 0 NOERROR, 3 NXDOMAIN, -1 malformed
  std::vector<std::string> addresses;  ///< A records found
};

/// Parses a response to query `id`; rcode -1 when malformed or for another query.
DnsAnswer parse_dns_response(std::string_view packet, uint16_t id);

/// Resolves `name` to an IPv4 address. On failure returns nullopt and sets
/// `error` to a one-line reason (e.g. "name not found", "no nameserver answered").
std::optional<std::string> resolve_ipv4(const std::string& name, std::string& error,
                                        const ResolverOptions& options = {});

}  // namespace ktrain::launch
