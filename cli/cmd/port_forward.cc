#include "cmd/port_forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>

#include "base/error.h"
#include "cmd/run_common.h"
#include "kube/connection.h"
#include "kube/port_forward.h"
#include "kube/watch.h"

namespace ktrain::cmd {

namespace {

int parse_port(const std::string& text, const std::string& spec, bool zero_ok) {
  int v = 0;
  bool ok = !text.empty() && text.size() <= 5;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) v = std::stoi(text);
  if (!ok || v > 65535 || (v == 0 && !zero_ok)) {
    throw UsageError("port-forward " + spec + ": \"" + text +
                     "\" is not a port (1-65535); expected LOCAL:REMOTE, REMOTE or :REMOTE");
  }
  return v;
}

struct PortForwardOptions {
  TargetFlags target;
  PodChoice choice;
  std::string run;
  std::vector<std::string> specs;
  std::string address = "127.0.0.1";

  int run_forward(Env& env) const {
    std::vector<PortPair> ports;
    for (const auto& s : specs) ports.push_back(parse_port_pair(s));
    if (ports.empty()) {
      throw UsageError("port-forward needs at least one port: LOCAL:REMOTE, e.g. 6006:6006");
    }
    require_cluster_run(env, target, run, "port-forward");
    kube::Connection conn(env);
    PodTarget t = resolve_pod(env, conn.client(), run, choice);
    return forward_ports(env, conn.client(), t, run, address, ports);
  }
};

/// `address` ("localhost" or dotted IPv4) as an in_addr; throws UsageError naming --address.
in_addr ipv4_address(const std::string& address) {
  in_addr addr{};
  const std::string a = address == "localhost" ? "127.0.0.1" : address;
  if (::inet_pton(AF_INET, a.c_str(), &addr) != 1) {
    throw UsageError("--address " + address + ": expected an IPv4 address such as 127.0.0.1");
  }
  return addr;
}

/// A socket bound to address:port (0: any free one), not yet listening; -1 with `why`
/// set when the port cannot be had. Throws UsageError for an address that is not IPv4.
int bind_to(const std::string& address, int port, std::string& why) {
  const in_addr addr = ipv4_address(address);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

/// A listening socket on address:port (0: any free one); the port it got.
int listen_on(const std::string& address, int& port) {
  std::string why;
  int fd = bind_to(address, port, why);
  if (fd >= 0 && ::listen(fd, 128) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) {
    throw Error("cannot listen on " + address + ":" + std::to_string(port) + ": " + why);
  }
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  port = ntohs(sa.sin_port);
  return fd;
}

}  // namespace

void check_address(const std::string& address) {
  ipv4_address(address);
}

bool port_free(const std::string& address, int port) {
  std::string why;
  const int fd = bind_to(address, port, why);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

PortPair parse_port_pair(const std::string& spec) {
  PortPair p;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) {
    p.remote = parse_port(spec, spec, false);
    p.local = p.remote;
  } else {
    p.local = colon == 0 ? 0 : parse_port(spec.substr(0, colon), spec, true);
    p.remote = parse_port(spec.substr(colon + 1), spec, false);
  }
  return p;
}

int forward_ports(Env& env, kube::Client& client, const PodTarget& t, const std::string& run,
                  const std::string& address, std::vector<PortPair> ports,
                  const std::function<void(const std::vector<PortPair>&)>& on_listening) {
  std::vector<int> listeners;
  struct Closer {
    std::vector<int>& fds;
    ~Closer() {
      for (int fd : fds) ::close(fd);
    }
  } closer{listeners};
  std::mutex mu;
  // The shared connection first (as kubectl): a refusal shows before anything listens.
  kube::PortForwarder forwarder(client, t.ns, t.pod, [&](const std::string& what) {
    if (env.global.verbose == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    *env.err << "port-forward: " << what << "\n";
    env.err->flush();
  });
  forwarder.connect();
  for (auto& p : ports) listeners.push_back(listen_on(address, p.local));
  if (on_listening) on_listening(ports);
  for (const auto& p : ports) {
    *env.out << "Forwarding from " << address << ":" << p.local << " -> " << p.remote << "\n";
  }
  env.out->flush();
  StopOnSignal stop;
  std::set<int> open_fds;  // accepted connections, shut down at the end
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  std::list<Worker> workers;
  auto reap = [&workers] {
    for (auto it = workers.begin(); it != workers.end();) {
      if (*it->done) {
        it->thread.join();
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
  };
  std::atomic<bool> pod_gone{false};
  std::string gone_why;
  bool unreachable = false;  // the API server did not answer for the grace period
  const std::chrono::seconds grace = kube::api_grace(env);
  auto print_error = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    *env.err << "ktrain: error: " << what << "\n";
    env.err->flush();
  };
  // The pod's end ends the forwarding: checked every second.
  std::thread watcher([&] {
    const auto path = kube::object_path(kube::resource_type("v1", "Pod"), t.ns, t.pod);
    auto answered = std::chrono::steady_clock::now();  // when the server last answered
    while (!pod_gone && StopOnSignal::received() == 0) {
      for (int i = 0; i < 10 && StopOnSignal::received() == 0 && !pod_gone; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (pod_gone || StopOnSignal::received() != 0) break;
      try {
        auto pod = client.get_if_exists(path);
        answered = std::chrono::steady_clock::now();
        std::string why;
        if (!pod) {
          why = "was deleted";
        } else if (pod->contains("metadata") && (*pod)["metadata"].contains("deletionTimestamp")) {
          why = "is being deleted";
        } else {
          const std::string phase =
              pod->value("status", nlohmann::json::object()).value("phase", "");
          if (phase != "Running") why = "is " + phase;
        }
        if (!why.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          gone_why = why;
          pod_gone = true;
        }
      } catch (const Error& e) {
        // Unreachable for a moment is tried again; for the grace period, it ends.
        if (e.exit_status() == exit_code::kUnreachable &&
            std::chrono::steady_clock::now() - answered >= grace) {
          std::lock_guard<std::mutex> lock(mu);
          gone_why = kube::gave_up_on_server(e, grace).what();
          unreachable = true;
          pod_gone = true;
        }
      }
    }
  });
  while (!pod_gone && StopOnSignal::received() == 0) {
    reap();
    std::vector<pollfd> p;
    for (int fd : listeners) p.push_back({fd, POLLIN, 0});
    if (::poll(p.data(), p.size(), 200) <= 0) continue;
    for (size_t i = 0; i < p.size(); ++i) {
      if (!(p[i].revents & POLLIN)) continue;
      int fd = ::accept4(listeners[i], nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const PortPair pp = ports[i];
      if (env.global.verbose > 0) {
        std::lock_guard<std::mutex> lock(mu);
        *env.err << "Handling connection for " << pp.local << "\n";
        env.err->flush();
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        open_fds.insert(fd);
      }
      Worker& w = workers.emplace_back();
      w.thread = std::thread([&, fd, pp, done = w.done] {
        try {
          const std::string why = forwarder.forward(pp.remote, fd);
          if (!why.empty()) {
            print_error("port-forward " + std::to_string(pp.local) + " -> " +
                        std::to_string(pp.remote) + ": " + why);
          }
        } catch (const Error& e) {
          print_error("port-forward " + std::to_string(pp.local) + " -> " +
                      std::to_string(pp.remote) + ": " + e.what());
        }
        std::lock_guard<std::mutex> lock(mu);
        open_fds.erase(fd);
        ::close(fd);
        *done = true;
      });
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int fd : open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  forwarder.close();  // connections waiting for the pod's side end too
  for (auto& w : workers) w.thread.join();
  watcher.join();
  if (unreachable) {
    *env.err << "ktrain: error: " << gone_why << "\nktrain: port-forward ends\n";
    return exit_code::kUnreachable;
  }
  if (pod_gone) {
    *env.err << "ktrain: error: pod " << t.pod << " (node " << t.node << " of " << run << ") "
             << gone_why << ": port-forward ends\n";
    return exit_code::kFailed;
  }
  return exit_code::kOk;
}

void add_port_forward_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<PortForwardOptions>();
  auto* sub = app.add_subcommand(
      "port-forward", "Forward local ports to a pod of a run (TensorBoard, a profiler, a service)");
  sub->add_option("RUN", opts->run, "The run or service (from submit or list)")->required();
  sub->add_option("PORTS", opts->specs,
                  "LOCAL:REMOTE, REMOTE (the same locally) or :REMOTE (any free local port)")
      ->required();
  opts->choice.add_to(*sub);
  sub->add_option("--address", opts->address, "The local address to listen on")
      ->default_val("127.0.0.1");
  opts->target.add_to(*sub);
  sub->footer(
      "Connections travel as SPDY streams in one WebSocket to the API server "
      "(SPDY/3.1+portforward.k8s.io, as kubectl 1.31+), or as a WebSocket each "
      "(v4.channel.k8s.io) where the server has no SPDY tunnel; several at once are fine. "
      "It runs until Ctrl-C (exit 0), until the pod goes away (exit 1), or until the API "
      "server has not answered for KTRAIN_API_GRACE seconds (60; exit 3).\n\n"
      "Examples:\n"
      "  ktrain port-forward myrun 6006:6006     # TensorBoard of node 0\n"
      "  ktrain port-forward mysvc :8000         # a replica of a service, any free port");
  sub->callback([opts, &env, &result] { result.status = opts->run_forward(env); });
}

}  // namespace ktrain::cmd
