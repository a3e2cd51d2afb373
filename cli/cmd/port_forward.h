#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/pod_target.h"

namespace ktrain::cmd {

/// One LOCAL:REMOTE of port-forward.
struct PortPair {
  int local = 0;  ///< 0: a free port, chosen when listening
  int remote = 0;
};

/// Throws UsageError unless `address` is one that --address takes (IPv4, or localhost).
void check_address(const std::string& address);

/// Whether `port` of `address` can be bound now (nothing listens there). Throws
/// UsageError for an address that is not IPv4.
bool port_free(const std::string& address, int port);

/// Parses "8080", "8080:80" or ":80"; throws UsageError naming `spec`.
PortPair parse_port_pair(const std::string& spec);

/// Listens on `address` for each of `ports` and forwards every connection to the pod of
/// `t`, until SIGINT/SIGTERM (exit 0) or the pod goes away (exit 1, saying so). Prints
/// "Forwarding from ADDRESS:LOCAL -> REMOTE" for each once listening, after calling
/// `on_listening` (when set) with the ports, the local ones chosen.
int forward_ports(Env& env, kube::Client& client, const PodTarget& t, const std::string& run,
                  const std::string& address, std::vector<PortPair> ports,
                  const std::function<void(const std::vector<PortPair>&)>& on_listening = nullptr);

/// `ktrain port-forward RUN [--rank N | --node N] LOCAL:REMOTE...`.
void add_port_forward_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
