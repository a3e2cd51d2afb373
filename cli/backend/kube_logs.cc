// KubeBackend::logs: each rank's current (or previous) pod log, fetched at once and
// printed rank by rank; with --follow, follow_kube_logs (kube_follow.cc).
#include <map>

#include "backend/kube_backend.h"
#include "backend/kube_follow.h"
#include "backend/kube_shared.h"
#include "backend/log_line.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/run_state.h"

namespace ktrain::backend {

using nlohmann::json;

void KubeBackend::logs(const std::string& run, const LogOptions& opts, const LogSink& sink) {
  const std::string ns = client_.default_namespace();
  if (opts.follow && !opts.previous) {
    // What to watch for the run's end: its Job, or its operator's object.
    auto found = find_run(ns, run);
    if (!found) throw run_not_found(run, ns);
    follow_kube_logs(client_, env_, ns, run, found->type, opts, sink);
    return;
  }
  const auto pod_type = kube::resource_type("v1", "Pod");
  std::map<int, json> newest;  // the newest pod of each node index
  kube::ListOptions lo;
  lo.label_selector = std::string(kube::kLabelRun) + "=" + run;
  lo.drop_keys = {"managedFields", "env", "envFrom", "volumeMounts", "volumes"};
  client_.list(kube::collection_path(pod_type, ns), lo, [&newest](json& p) {
    const int idx = kube::pod_rank(p);
    if (idx < 0) return;
    auto it = newest.find(idx);
    if (it == newest.end() || p["metadata"].value("creationTimestamp", "") >
                                  it->second["metadata"].value("creationTimestamp", "")) {
      newest[idx] = std::move(p);
    }
  });
  if (newest.empty()) {
    if (!find_run(ns, run)) throw run_not_found(run, ns);
    return;  // no pod yet
  }
  if (opts.node && !newest.count(*opts.node)) {
    throw UsageError("--node " + std::to_string(*opts.node) + ": run \"" + run +
                     "\" has no pod with that index (it has " + std::to_string(newest.size()) +
                     ")");
  }

  kube::Query base{{"timestamps", "true"}};
  if (opts.tail) base.emplace_back("tailLines", std::to_string(*opts.tail));
  if (opts.since) base.emplace_back("sinceTime", format_rfc3339(*opts.since));
  if (opts.previous) base.emplace_back("previous", "true");
  const std::string rank_prefix =
      opts.rank ? "[rank " + std::to_string(*opts.rank) + "]" : std::string();

  // Splits "TIMESTAMP text" and filters by worker rank; false when the sink says stop.
  std::string cut;
  auto emit = [&](int node, std::string_view raw) {
    raw = cut_long_line(raw, cut);
    LogLine line;
    line.rank = node;
    auto sp = raw.find(' ');
    if (sp != std::string_view::npos && sp >= 20 && raw[4] == '-' && raw[10] == 'T') {
      line.timestamp = std::string(raw.substr(0, sp));
      line.text = std::string(raw.substr(sp + 1));
    } else {
      line.text = std::string(raw);
    }
    if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
    if (!rank_prefix.empty() && line.text.rfind(rank_prefix, 0) != 0) return true;
    return sink(line);
  };

  std::vector<int> nodes;
  for (const auto& [idx, pod] : newest) {
    if (opts.node && idx != *opts.node) continue;
    nodes.push_back(idx);
  }

  {
    std::vector<net::Request> reqs;
    for (int idx : nodes) {
      const auto& pod = newest[idx];
      // The container: --container, else the pod's own (an operator's names it).
      kube::Query query = base;
      query.emplace_back("container",
                         opts.container.empty() ? kube::log_container(pod) : opts.container);
      auto req = client_.request(
          "GET", kube::object_path(pod_type, ns, pod["metadata"].value("name", ""), "log"), query);
      req.headers = {{"Accept", "*/*"}};
      reqs.push_back(std::move(req));
    }
    auto resps = client_.send_all(reqs);
    for (size_t i = 0; i < resps.size(); ++i) {
      // A pod whose container has not started yet has no log (400): nothing to print.
      if (resps[i].failure == net::TransportFailure::kNone && resps[i].status == 400 &&
          newest[nodes[i]]["status"].value("phase", "") == "Pending") {
        continue;
      }
      client_.check(reqs[i], resps[i]);
      std::string_view body = resps[i].body;
      size_t start = 0;
      while (start < body.size()) {
        auto nl = body.find('\n', start);
        auto end = nl == std::string_view::npos ? body.size() : nl;
        if (!emit(nodes[i], body.substr(start, end - start))) return;
        start = end + 1;
      }
    }
    return;
  }
}

}  // namespace ktrain::backend
