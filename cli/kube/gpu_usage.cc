#include "kube/gpu_usage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/quantity.h"
#include "kube/run_state.h"

namespace ktrain::kube {

using nlohmann::json;

namespace {

std::optional<double> known(double v) {
  if (std::isnan(v) || std::isinf(v) || v < 0) return std::nullopt;
  return v;
}

/// "0" < "1" < "10": device indexes in number order, others after in text order.
bool gpu_before(const GpuUsage& a, const GpuUsage& b) {
  if (a.node != b.node) return a.node < b.node;
  const bool an = !a.gpu.empty() && std::all_of(a.gpu.begin(), a.gpu.end(), ::isdigit);
  const bool bn = !b.gpu.empty() && std::all_of(b.gpu.begin(), b.gpu.end(), ::isdigit);
  if (an && bn && a.gpu.size() != b.gpu.size()) return a.gpu.size() < b.gpu.size();
  if (an != bn) return an;
  if (a.gpu != b.gpu) return a.gpu < b.gpu;
  return a.uuid < b.uuid;
}

std::string label_or(const PromSample& s, std::string_view key, std::string_view old_key) {
  std::string_view v = s.label(key);
  if (v.empty()) v = s.label(old_key);
  return std::string(v);
}

std::optional<double> quantity(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return std::nullopt;
  auto q = parse_quantity(j[key].get<std::string>());
  if (!q) return std::nullopt;
  return static_cast<double>(*q);
}

int gpu_limit(const json& pod) {
  int n = 0;
  const auto& spec = pod.contains("spec") ? pod["spec"] : json();
  if (!spec.is_object() || !spec.contains("containers") || !spec["containers"].is_array()) return 0;
  for (const auto& c : spec["containers"]) {
    if (!c.is_object() || !c.contains("resources")) continue;
    const auto& r = c["resources"];
    for (const char* part : {"limits", "requests"}) {
      if (r.contains(part) && r[part].is_object()) {
        if (auto q = quantity(r[part], "nvidia.com/gpu")) {
          n += static_cast<int>(*q);
          break;
        }
      }
    }
  }
  return n;
}

std::string text_at(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object() || !at->contains(k)) return "";
    at = &(*at)[k];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

}  // namespace

bool is_dcgm_metric(std::string_view name) {
  return name == kDcgmGpuUtil || name == kDcgmFbUsed || name == kDcgmFbFree ||
         name == kDcgmFbReserved;
}

std::vector<GpuUsage> gpus_from_dcgm(const std::vector<PromSample>& samples,
                                     const std::string& node) {
  struct Acc {
    GpuUsage gpu;
    std::optional<double> free, reserved;
  };
  std::map<std::string, Acc> by_key;  // UUID (or node/gpu) -> figures
  for (const auto& s : samples) {
    if (!is_dcgm_metric(s.name)) continue;
    std::string uuid(s.label("UUID"));
    std::string gpu(s.label("gpu"));
    std::string where = node.empty() ? std::string(s.label("Hostname")) : node;
    // A MIG instance is its own row (its parent's UUID and the instance id).
    std::string key = uuid.empty() ? where + "/" + gpu : uuid;
    if (auto mig = s.label("GPU_I_ID"); !mig.empty()) {
      key += "/" + std::string(mig);
      gpu += "/" + std::string(mig);
    }
    auto [it, fresh] = by_key.try_emplace(key);
    auto& acc = it->second;
    if (fresh) {
      acc.gpu.node = where;
      acc.gpu.gpu = gpu;
      acc.gpu.uuid = uuid;
      acc.gpu.model = std::string(s.label("modelName"));
    }
    if (acc.gpu.pod.empty()) {
      acc.gpu.pod = label_or(s, "pod", "pod_name");
      acc.gpu.namespace_ = label_or(s, "namespace", "pod_namespace");
    }
    const auto v = known(s.value);
    if (s.name == kDcgmGpuUtil) {
      acc.gpu.util_percent = v ? std::optional<double>(std::min(*v, 100.0)) : std::nullopt;
    } else if (s.name == kDcgmFbUsed) {
      acc.gpu.used_bytes = v ? std::optional<double>(*v * 1024 * 1024) : std::nullopt;
    } else if (s.name == kDcgmFbFree) {
      acc.free = v ? std::optional<double>(*v * 1024 * 1024) : std::nullopt;
    } else if (s.name == kDcgmFbReserved) {
      acc.reserved = v ? std::optional<double>(*v * 1024 * 1024) : std::nullopt;
    }
  }
  std::vector<GpuUsage> out;
  for (auto& [key, acc] : by_key) {
    if (acc.gpu.used_bytes && acc.free) {
      acc.gpu.total_bytes = *acc.gpu.used_bytes + *acc.free + acc.reserved.value_or(0);
    }
    out.push_back(std::move(acc.gpu));
  }
  std::sort(out.begin(), out.end(), gpu_before);
  return out;
}

GpuTotals totals(const std::vector<GpuUsage>& gpus) {
  GpuTotals t;
  t.count = static_cast<int>(gpus.size());
  double util = 0;
  int util_n = 0;
  for (const auto& g : gpus) {
    if (g.util_percent) {
      util += *g.util_percent;
      ++util_n;
    }
    if (g.used_bytes) t.used_bytes = t.used_bytes.value_or(0) + *g.used_bytes;
    if (g.total_bytes) t.total_bytes = t.total_bytes.value_or(0) + *g.total_bytes;
  }
  if (util_n > 0) t.util_percent = util / util_n;
  return t;
}

std::pair<std::optional<double>, std::optional<double>> usage_of(const json& m) {
  std::optional<double> cpu, memory;
  auto add = [&](const json& usage) {
    if (auto c = quantity(usage, "cpu")) cpu = cpu.value_or(0) + *c;
    if (auto b = quantity(usage, "memory")) memory = memory.value_or(0) + *b;
  };
  if (!m.is_object()) return {cpu, memory};
  if (m.contains("containers") && m["containers"].is_array()) {
    for (const auto& c : m["containers"]) {
      if (c.is_object() && c.contains("usage")) add(c["usage"]);
    }
  } else if (m.contains("usage")) {
    add(m["usage"]);
  }
  return {cpu, memory};
}

std::vector<PodUsage> join_pods(const std::vector<json>& pods, const std::vector<json>& pod_metrics,
                                const std::vector<GpuUsage>& gpus) {
  // One pod per (run, rank): the newest. A service's replicas are ranked by age.
  std::map<std::string, std::map<int, const json*>> ranked;
  std::map<std::string, std::vector<const json*>> replicas;
  for (const auto& p : pods) {
    const std::string name = text_at(p, {"metadata", "labels", kLabelRun});
    if (name.empty()) continue;
    const std::string run = text_at(p, {"metadata", "namespace"}) + "/" + name;
    const int rank = pod_rank(p);
    if (rank < 0) {
      replicas[run].push_back(&p);
      continue;
    }
    auto& slot = ranked[run][rank];
    if (!slot || text_at(p, {"metadata", "creationTimestamp"}) >
                     text_at(*slot, {"metadata", "creationTimestamp"})) {
      slot = &p;
    }
  }
  std::map<std::string, const json*> metrics_by_pod;  // "ns/name"
  for (const auto& m : pod_metrics) {
    metrics_by_pod[text_at(m, {"metadata", "namespace"}) + "/" + text_at(m, {"metadata", "name"})] =
        &m;
  }
  auto make = [&](const std::string& kind, int rank, const json& p) {
    PodUsage u;
    u.run = text_at(p, {"metadata", "labels", kLabelRun});
    u.kind = kind;
    u.rank = rank;
    u.pod = text_at(p, {"metadata", "name"});
    const std::string ns = text_at(p, {"metadata", "namespace"});
    u.namespace_ = ns;
    u.node = text_at(p, {"spec", "nodeName"});
    u.phase = text_at(p, {"status", "phase"});
    u.gpus_requested = gpu_limit(p);
    if (auto it = metrics_by_pod.find(ns + "/" + u.pod); it != metrics_by_pod.end()) {
      std::tie(u.cpu_cores, u.memory_bytes) = usage_of(*it->second);
    }
    for (const auto& g : gpus) {
      // The exporter names the pod and its namespace; an exporter without the namespace
      // label (old versions) is matched on the pod and node.
      if (g.pod != u.pod) continue;
      if (!g.namespace_.empty() ? g.namespace_ != ns : g.node != u.node) continue;
      u.gpus.push_back(g);
    }
    return u;
  };
  std::set<std::string> runs;
  for (const auto& [run, _] : ranked) runs.insert(run);
  for (const auto& [run, _] : replicas) runs.insert(run);
  std::vector<PodUsage> out;
  for (const auto& run : runs) {
    if (auto it = ranked.find(run); it != ranked.end()) {
      for (const auto& [rank, p] : it->second) out.push_back(make("train", rank, *p));
    }
    if (auto it = replicas.find(run); it != replicas.end()) {
      auto list = it->second;
      std::stable_sort(list.begin(), list.end(), [](const json* a, const json* b) {
        return text_at(*a, {"metadata", "creationTimestamp"}) <
               text_at(*b, {"metadata", "creationTimestamp"});
      });
      for (size_t i = 0; i < list.size(); ++i) {
        out.push_back(make("serve", static_cast<int>(i), *list[i]));
      }
    }
  }
  return out;
}

std::vector<NodeUsage> join_nodes(const std::vector<PodUsage>& pods,
                                  const std::vector<json>& node_metrics,
                                  const std::vector<GpuUsage>& gpus,
                                  const std::vector<std::string>& exporter_nodes) {
  std::map<std::string, NodeUsage> nodes;
  for (const auto& p : pods) {
    if (p.node.empty()) continue;
    auto& n = nodes[p.node];
    n.node = p.node;
    n.pods.push_back(p.pod);
  }
  for (const auto& m : node_metrics) {
    auto it = nodes.find(text_at(m, {"metadata", "name"}));
    if (it != nodes.end()) std::tie(it->second.cpu_cores, it->second.memory_bytes) = usage_of(m);
  }
  for (const auto& g : gpus) {
    if (auto it = nodes.find(g.node); it != nodes.end()) it->second.gpus.push_back(g);
  }
  for (const auto& e : exporter_nodes) {
    if (auto it = nodes.find(e); it != nodes.end()) it->second.exporter = true;
  }
  std::vector<NodeUsage> out;
  for (auto& [_, n] : nodes) out.push_back(std::move(n));
  return out;
}

}  // namespace ktrain::kube
