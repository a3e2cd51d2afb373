#include "kube/usage_fetch.h"

#include <algorithm>
#include <map>
#include <set>

#include "kube/run_state.h"

namespace ktrain::kube {

using nlohmann::json;

std::string DcgmLocation::to_string() const {
  return namespace_ + "/" + (scheme.empty() ? "" : scheme + ":") + service + ":" + port;
}

std::optional<DcgmLocation> parse_dcgm_location(std::string_view s, std::string* problem) {
  auto fail = [problem](const std::string& why) -> std::optional<DcgmLocation> {
    if (problem) *problem = why;
    return std::nullopt;
  };
  const auto slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return fail("expected NAMESPACE/SERVICE:PORT, such as gpu-operator/nvidia-dcgm-exporter:9400");
  }
  DcgmLocation loc;
  loc.namespace_ = std::string(s.substr(0, slash));
  std::string rest(s.substr(slash + 1));
  for (const char* scheme : {"https:", "http:"}) {
    const std::string p = scheme;
    if (rest.rfind(p, 0) == 0) {
      loc.scheme = p == "https:" ? "https" : "";
      rest = rest.substr(p.size());
    }
  }
  const auto colon = rest.find(':');
  loc.service = rest.substr(0, colon);
  if (colon != std::string::npos) loc.port = rest.substr(colon + 1);
  auto dns_label = [](const std::string& n) {
    if (n.empty() || n.size() > 63 || n.front() == '-' || n.back() == '-') return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
  };
  if (!dns_label(loc.namespace_)) return fail("'" + loc.namespace_ + "' is not a namespace name");
  if (!dns_label(loc.service)) return fail("'" + loc.service + "' is not a service name");
  if (loc.port.empty() || !dns_label(loc.port)) {
    return fail("'" + loc.port + "' is not a port number or name");
  }
  return loc;
}

namespace {

const char* const kMetricsApi = "/apis/metrics.k8s.io/v1beta1";

std::string metrics_missing(const ApiError& e) {
  const int code = e.http_status();
  if (code == 404) {
    return "no CPU and memory figures: the API server does not serve metrics.k8s.io (install "
           "metrics-server: kubectl apply -f https://github.com/kubernetes-sigs/metrics-server/"
           "releases/latest/download/components.yaml)";
  }
  if (code == 503) {
    return "no CPU and memory figures: metrics.k8s.io is registered but does not answer (503: "
           "is metrics-server running? kubectl -n kube-system get deploy metrics-server)";
  }
  return std::string("no CPU and memory figures: ") + e.what();
}

std::string install_dcgm_hint(const DcgmLocation& loc) {
  return "NVIDIA's GPU operator runs it on every GPU node (helm install gpu-operator "
         "nvidia/gpu-operator -n gpu-operator --create-namespace); or point --dcgm or " +
         std::string(kDcgmVar) + " at another exporter's Service, now " + loc.to_string();
}

/// "k=v,k2=v2" from a Service's spec.selector.
std::string selector_of(const json& svc) {
  std::string out;
  if (!svc.contains("spec") || !svc["spec"].contains("selector")) return out;
  const auto& sel = svc["spec"]["selector"];
  if (!sel.is_object()) return out;
  for (const auto& [k, v] : sel.items()) {
    if (!v.is_string()) continue;
    out += (out.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  }
  return out;
}

/// The pods' port behind the Service's port `port` (a number or name): its targetPort
/// when that is a number, else the port itself.
std::string target_port(const json& svc, const std::string& port) {
  if (svc.contains("spec") && svc["spec"].contains("ports") && svc["spec"]["ports"].is_array()) {
    for (const auto& p : svc["spec"]["ports"]) {
      const std::string number = p.contains("port") ? p["port"].dump() : "";
      if (p.value("name", "") != port && number != port) continue;
      if (p.contains("targetPort") && p["targetPort"].is_number_integer()) {
        return p["targetPort"].dump();
      }
      return number.empty() ? port : number;
    }
  }
  return port;
}

struct DcgmResult {
  std::vector<GpuUsage> gpus;
  std::vector<std::string> answered;  ///< nodes whose exporter answered
};

/// Parses one exporter's answer (`node` "" = from the samples' Hostname label).
void take_metrics(const std::string& body, const std::string& node, const std::string& who,
                  DcgmResult& out, UsageReport& rep) {
  const auto parsed = parse_prometheus_text(body, is_dcgm_metric);
  auto gpus = gpus_from_dcgm(parsed.samples, node);
  if (parsed.skipped_lines > 0) {
    rep.notes.push_back(who + ": " + std::to_string(parsed.skipped_lines) +
                        " line(s) of its /metrics did not parse and were skipped");
  }
  for (auto& g : gpus) out.gpus.push_back(std::move(g));
  if (!node.empty()) out.answered.push_back(node);
}

/// Through the Service (one endpoint: the GPUs of one node), for users who may not list
/// the exporter's pods.
DcgmResult via_service(Client& client, const DcgmLocation& loc, UsageReport& rep) {
  DcgmResult out;
  const std::string path = "/api/v1/namespaces/" + loc.namespace_ + "/services/" +
                           (loc.scheme.empty() ? "" : loc.scheme + ":") + loc.service + ":" +
                           loc.port + "/proxy/metrics";
  auto req = client.request("GET", path);
  req.headers = {{"Accept", "text/plain"}};
  req.max_body_bytes = kMaxMetricsBytes;
  req.timeout = std::chrono::seconds(20);
  auto resp = client.send(req);
  if (resp.status != 200) {
    rep.gpu_missing = "no GPU figures: the DCGM exporter's Service " + loc.to_string() +
                      " answered " + std::to_string(resp.status) + " through the API server";
    return out;
  }
  take_metrics(resp.body, "", "the DCGM exporter", out, rep);
  for (const auto& g : out.gpus) {
    if (std::find(out.answered.begin(), out.answered.end(), g.node) == out.answered.end()) {
      out.answered.push_back(g.node);
    }
  }
  rep.gpu_source = true;
  rep.notes.push_back("GPU figures through the Service " + loc.to_string() +
                      ", which reaches one node's exporter (listing the exporter's pods in " +
                      loc.namespace_ + " is not allowed): other nodes' GPUs are missing");
  return out;
}

DcgmResult fetch_dcgm(Client& client, const DcgmLocation& loc, const std::set<std::string>& nodes,
                      UsageReport& rep) {
  DcgmResult out;
  std::optional<json> svc;
  try {
    svc = client.get_if_exists(
        object_path(resource_type("v1", "Service"), loc.namespace_, loc.service));
  } catch (const ApiError& e) {
    if (e.http_status() != 403) throw;
    rep.gpu_missing = std::string("no GPU figures: ") + e.what();
    return out;
  }
  if (!svc) {
    rep.gpu_missing = "no GPU figures: no DCGM exporter (Service " + loc.namespace_ + "/" +
                      loc.service + " not found). " + install_dcgm_hint(loc);
    return out;
  }
  const std::string selector = selector_of(*svc);
  if (selector.empty()) return via_service(client, loc, rep);
  std::map<std::string, std::string> exporter_on;  // node -> a running exporter pod
  try {
    ListOptions lo;
    lo.label_selector = selector;
    lo.drop_keys = {"managedFields", "env", "volumes", "volumeMounts", "conditions"};
    client.list(
        collection_path(resource_type("v1", "Pod"), loc.namespace_), lo, [&exporter_on](json& p) {
          const std::string node = p["spec"].value("nodeName", "");
          const std::string phase = p.contains("status") ? p["status"].value("phase", "") : "";
          if (!node.empty() && phase == "Running") {
            exporter_on.emplace(node, p["metadata"].value("name", ""));
          }
        });
  } catch (const ApiError& e) {
    if (e.http_status() != 403) throw;
    return via_service(client, loc, rep);
  }
  if (exporter_on.empty()) {
    rep.gpu_missing = "no GPU figures: the DCGM exporter's Service " + loc.namespace_ + "/" +
                      loc.service + " has no running pods (kubectl -n " + loc.namespace_ +
                      " get pods -l " + selector + ")";
    return out;
  }
  rep.gpu_source = true;
  const std::string port = target_port(*svc, loc.port);
  std::vector<net::Request> reqs;
  std::vector<std::string> asked;
  for (const auto& node : nodes) {
    auto it = exporter_on.find(node);
    if (it == exporter_on.end()) {
      rep.notes.push_back("node " + node +
                          ": no DCGM exporter runs there (no GPUs, or the "
                          "exporter is not scheduled on it)");
      continue;
    }
    const std::string path = "/api/v1/namespaces/" + loc.namespace_ + "/pods/" +
                             (loc.scheme.empty() ? "" : loc.scheme + ":") + it->second + ":" +
                             port + "/proxy/metrics";
    auto req = client.request("GET", path);
    req.headers = {{"Accept", "text/plain"}};
    req.max_body_bytes = kMaxMetricsBytes;
    req.timeout = std::chrono::seconds(20);
    reqs.push_back(std::move(req));
    asked.push_back(node);
  }
  if (reqs.empty()) return out;
  const auto requests = reqs;
  auto resps = client.send_all(std::move(reqs));
  for (size_t i = 0; i < resps.size(); ++i) {
    const auto& resp = resps[i];
    if (resp.failure != net::TransportFailure::kNone) client.check(requests[i], resp);
    if (resp.status != 200) {
      rep.notes.push_back("node " + asked[i] + ": its DCGM exporter answered " +
                          std::to_string(resp.status) + " through the API server");
      continue;
    }
    take_metrics(resp.body, asked[i], "node " + asked[i], out, rep);
  }
  if (out.answered.empty()) {
    rep.gpu_source = false;
    rep.gpu_missing = "no GPU figures: no DCGM exporter on the run's nodes answered";
  }
  return out;
}

/// A figure of the kubelet's summary ({"usageNanoCores": N} ...), nullopt when absent.
std::optional<double> number_at(const json& j, const char* a, const char* b) {
  if (!j.is_object() || !j.contains(a) || !j[a].is_object()) return std::nullopt;
  const auto& o = j[a];
  if (!o.contains(b) || !o[b].is_number()) return std::nullopt;
  return o[b].get<double>();
}

/// metrics.k8s.io's {"cpu": "Nn", "memory": "N"} from a kubelet summary's cpu and memory.
json usage_from_summary(const json& stats) {
  json usage = json::object();
  if (auto c = number_at(stats, "cpu", "usageNanoCores")) {
    usage["cpu"] = std::to_string(static_cast<long long>(*c)) + "n";
  }
  if (auto m = number_at(stats, "memory", "workingSetBytes")) {
    usage["memory"] = std::to_string(static_cast<long long>(*m));
  }
  return usage;
}

/// CPU and memory without metrics-server: each node's kubelet summary (/stats/summary,
/// what metrics-server itself reads) through the API server's node proxy, made into
/// PodMetrics and NodeMetrics. Reading it needs nodes/proxy, a cluster admin's right
/// (ktrain setup never grants it: it opens the kubelet's whole API); without it, the
/// figures are missing and `rep.metrics_missing` says what to install.
void fetch_kubelet_stats(Client& client, const std::set<std::string>& nodes,
                         const std::set<std::string>& pod_keys, std::vector<json>& pod_metrics,
                         std::vector<json>& node_metrics, UsageReport& rep) {
  if (nodes.empty()) return;
  std::vector<net::Request> reqs;
  for (const auto& n : nodes) {
    auto req = client.request("GET", "/api/v1/nodes/" + n + "/proxy/stats/summary");
    req.max_body_bytes = kMaxMetricsBytes;
    req.timeout = std::chrono::seconds(20);
    reqs.push_back(std::move(req));
  }
  const std::vector<std::string> asked(nodes.begin(), nodes.end());
  const auto requests = reqs;
  auto resps = client.send_all(std::move(reqs));
  int answered = 0, forbidden = 0;
  for (size_t i = 0; i < resps.size(); ++i) {
    const auto& resp = resps[i];
    if (resp.failure != net::TransportFailure::kNone) client.check(requests[i], resp);
    if (resp.status == 401) client.check(requests[i], resp);
    if (resp.status == 403) {
      ++forbidden;
      continue;
    }
    json summary;
    if (resp.status == 200) {
      try {
        summary = json::parse(resp.body);
      } catch (const json::exception&) {
      }
    }
    if (resp.status == 404) continue;  // no such node (gone), or no kubelet API behind it
    if (!summary.is_object()) {
      rep.notes.push_back("node " + asked[i] + ": its kubelet's /stats/summary answered " +
                          std::to_string(resp.status) +
                          (resp.status == 200 ? " with something that is not JSON" : ""));
      continue;
    }
    ++answered;
    if (summary.contains("node") && summary["node"].is_object()) {
      node_metrics.push_back(
          {{"metadata", {{"name", asked[i]}}}, {"usage", usage_from_summary(summary["node"])}});
    }
    if (!summary.contains("pods") || !summary["pods"].is_array()) continue;
    for (const auto& p : summary["pods"]) {
      if (!p.is_object() || !p.contains("podRef") || !p["podRef"].is_object()) continue;
      const std::string ns = p["podRef"].value("namespace", "");
      const std::string name = p["podRef"].value("name", "");
      if (!pod_keys.count(ns + "/" + name)) continue;  // not a pod of the runs shown
      json m = {{"metadata", {{"name", name}, {"namespace", ns}}}, {"containers", json::array()}};
      if (p.contains("containers") && p["containers"].is_array()) {
        for (const auto& c : p["containers"]) {
          if (!c.is_object()) continue;
          m["containers"].push_back(
              {{"name", c.value("name", "")}, {"usage", usage_from_summary(c)}});
        }
      }
      pod_metrics.push_back(std::move(m));
    }
  }
  if (answered > 0) {
    rep.metrics_source = true;
    rep.notes.push_back(
        "CPU and memory from the kubelets' /stats/summary (metrics-server is not there: " +
        rep.metrics_missing.substr(rep.metrics_missing.find(": ") + 2) + ")");
    rep.metrics_missing.clear();
  } else if (forbidden > 0) {
    rep.metrics_missing +=
        "; reading the kubelets' own figures (/stats/summary) instead needs nodes/proxy, "
        "which this user lacks (a cluster admin's right)";
  }
}

std::string text_at(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].is_object()) return "";
  const auto& o = j[a];
  return o.contains(b) && o[b].is_string() ? o[b].get<std::string>() : "";
}

}  // namespace

UsageReport fetch_usage(Client& client, const UsageQuery& q) {
  UsageReport rep;
  const std::string selector = q.run.empty() ? std::string(kLabelManagedBy) + "=ktrain"
                                             : std::string(kLabelRun) + "=" + q.run;
  std::vector<json> pods;
  ListOptions lo;
  lo.label_selector = selector;
  lo.drop_keys = {"managedFields", "env", "envFrom", "volumeMounts", "volumes", "conditions"};
  client.list(collection_path(resource_type("v1", "Pod"), q.namespace_), lo,
              [&pods](json& p) { pods.push_back(std::move(p)); });
  if (!q.run.empty() && pods.empty()) {
    const auto job =
        client.get_if_exists(object_path(resource_type("batch/v1", "Job"), q.namespace_, q.run));
    std::optional<json> deploy;
    if (!job) {
      deploy = client.get_if_exists(
          object_path(resource_type("apps/v1", "Deployment"), q.namespace_, q.run));
    }
    if (!job && !(deploy && managed_by_ktrain(*deploy))) {
      throw Error("run \"" + q.run + "\" not found in namespace \"" + q.namespace_ +
                  "\" (see 'ktrain list', or pass -n NAMESPACE)");
    }
  }
  std::set<std::string> nodes;
  for (const auto& p : pods) {
    const std::string node = text_at(p, "spec", "nodeName");
    if (!node.empty()) nodes.insert(node);
  }

  std::vector<json> pod_metrics, node_metrics;
  try {
    ListOptions mo;
    mo.label_selector = selector;
    mo.limit = 0;
    const std::string path = std::string(kMetricsApi) +
                             (q.namespace_.empty() ? "" : "/namespaces/" + q.namespace_) + "/pods";
    client.list(path, mo, [&pod_metrics](json& m) { pod_metrics.push_back(std::move(m)); });
    rep.metrics_source = true;
  } catch (const ApiError& e) {
    if (e.exit_status() == exit_code::kUnreachable && e.http_status() == 401) throw;
    rep.metrics_missing = metrics_missing(e);
  }
  if (rep.metrics_source && !nodes.empty()) {
    std::vector<net::Request> reqs;
    for (const auto& n : nodes)
      reqs.push_back(client.request("GET", std::string(kMetricsApi) + "/nodes/" + n));
    const auto requests = reqs;
    auto resps = client.send_all(std::move(reqs));
    for (size_t i = 0; i < resps.size(); ++i) {
      if (resps[i].failure != net::TransportFailure::kNone) client.check(requests[i], resps[i]);
      if (resps[i].status != 200)
        continue;  // a node without figures yet; users without nodes access
      try {
        node_metrics.push_back(json::parse(resps[i].body));
      } catch (const json::exception&) {
      }
    }
  }
  // No metrics-server (not served, or down): the kubelets' own summaries, where allowed.
  if (!rep.metrics_source) {
    std::set<std::string> pod_keys;
    for (const auto& p : pods) {
      pod_keys.insert(text_at(p, "metadata", "namespace") + "/" + text_at(p, "metadata", "name"));
    }
    fetch_kubelet_stats(client, nodes, pod_keys, pod_metrics, node_metrics, rep);
  }
  const auto dcgm = fetch_dcgm(client, q.dcgm, nodes, rep);
  rep.pods = join_pods(pods, pod_metrics, dcgm.gpus);
  rep.nodes = join_nodes(rep.pods, node_metrics, dcgm.gpus, dcgm.answered);
  return rep;
}

}  // namespace ktrain::kube
