#include "cmd/top.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/local_backend.h"
#include "base/error.h"
#include "cmd/run_common.h"
#include "kube/connection.h"
#include "kube/usage_fetch.h"

namespace ktrain::cmd {

namespace {

using nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string bytes_text(std::optional<double> b) {
  if (!b) return "-";
  if (*b < kGiB) return fmt::format("{:.0f} MiB", *b / (1024 * 1024));
  return fmt::format("{:.1f} GiB", *b / kGiB);
}

/// "612.3/640.0 GiB": used of total, in the total's unit.
std::string gpu_memory_text(const kube::GpuTotals& t) {
  if (t.count == 0 || (!t.used_bytes && !t.total_bytes)) return "-";
  auto num = [](std::optional<double> b) {
    return b ? fmt::format("{:.1f}", *b / kGiB) : std::string("?");
  };
  return num(t.used_bytes) + "/" + num(t.total_bytes) + " GiB";
}

std::string percent_text(std::optional<double> p) {
  return p ? fmt::format("{:.0f}%", *p) : "-";
}

std::string cores_text(std::optional<double> c) {
  return c ? fmt::format("{:.2f}", *c) : "-";
}

ordered_json number_or_null(std::optional<double> v, bool integral = false) {
  if (!v) return nullptr;
  if (integral) return static_cast<std::int64_t>(*v + 0.5);
  return std::round(*v * 100) / 100;
}

ordered_json gpu_totals_json(const kube::GpuTotals& t) {
  ordered_json j;
  j["gpuCount"] = t.count;
  j["gpuUtilPercent"] = number_or_null(t.util_percent);
  j["gpuMemoryUsedBytes"] = number_or_null(t.used_bytes, true);
  j["gpuMemoryTotalBytes"] = number_or_null(t.total_bytes, true);
  return j;
}

/// Prints `rows` (the first is the header) in columns two spaces apart.
void print_columns(Env& env, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    }
    *env.out << line << "\n";
  }
}

/// One run's figures, summed over its pods.
struct RunTotals {
  std::string run, kind, namespace_;
  int pods = 0;
  std::vector<kube::GpuUsage> gpus;
  std::optional<double> cpu_cores, memory_bytes;
};

std::vector<RunTotals> by_run(const std::vector<kube::PodUsage>& pods) {
  std::map<std::string, RunTotals> runs;
  for (const auto& p : pods) {
    auto& r = runs[p.namespace_ + "/" + p.run];
    r.run = p.run;
    r.namespace_ = p.namespace_;
    r.kind = p.kind;
    ++r.pods;
    for (const auto& g : p.gpus) r.gpus.push_back(g);
    if (p.cpu_cores) r.cpu_cores = r.cpu_cores.value_or(0) + *p.cpu_cores;
    if (p.memory_bytes) r.memory_bytes = r.memory_bytes.value_or(0) + *p.memory_bytes;
  }
  std::vector<RunTotals> out;
  for (auto& [_, r] : runs) out.push_back(std::move(r));
  return out;
}

struct TopOptions {
  TargetFlags target;
  std::string run;
  std::string dcgm;
  bool all_namespaces = false;
  bool watch = false;
  int interval = 5;

  int run_top(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "table" && o != "wide" && o != "json") {
      throw UsageError("-o " + o + ": top prints table, wide or json");
    }
    if (interval < 1) throw UsageError("--interval must be at least 1 (seconds)");
    if (all_namespaces && !run.empty()) {
      throw UsageError("-A lists every namespace's runs; with RUN, pass -n NAMESPACE instead");
    }
    kube::UsageQuery q;
    std::string where = dcgm;
    if (where.empty()) where = env.var(kube::kDcgmVar).value_or("");
    if (!where.empty()) {
      std::string problem;
      auto loc = kube::parse_dcgm_location(where, &problem);
      if (!loc) {
        throw UsageError((dcgm.empty() ? std::string(kube::kDcgmVar) + "=" : "--dcgm ") + where +
                         ": " + problem);
      }
      q.dcgm = *loc;
    }
    const bool local_run = !run.empty() && (env.var("XDG_STATE_HOME") || env.var("HOME")) &&
                           backend::LocalBackend(env, backend::LocalPrograms{}).has_run(run);
    auto l = env.var("KTRAIN_LOCAL");
    if (target.local || local_run || (l && *l == "1")) {
      throw UsageError(
          "top shows the GPU figures of cluster runs (from the DCGM exporter and "
          "metrics-server); a local run has neither: nvidia-smi shows this machine's GPUs");
    }
    kube::Connection conn(env);
    q.namespace_ = all_namespaces ? "" : conn.client().default_namespace();
    q.run = run;
    bool first = true;
    while (true) {
      const auto rep = kube::fetch_usage(conn.client(), q);
      if (!rep.gpu_source && !rep.metrics_source) {
        // The API server answered: what is missing is in the cluster (exit 1), not the
        // way to it (3, which authentication and connection failures keep).
        throw Error("no figures to show:\n  " + rep.gpu_missing + "\n  " + rep.metrics_missing,
                    exit_code::kFailed);
      }
      if (watch && !first && o != "json") {
        *env.out << (env.out_is_terminal ? "\033[H\033[2J" : "\n");
      }
      if (first || !watch) {
        if (!rep.gpu_missing.empty()) env.warn(rep.gpu_missing);
        if (!rep.metrics_missing.empty()) env.warn(rep.metrics_missing);
        for (const auto& n : rep.notes) env.warn(n);
        warn_unmapped(env, rep);
      }
      first = false;
      if (run.empty()) {
        print_runs(env, rep, q.namespace_, o);
      } else {
        print_run(env, rep, q.namespace_, o);
      }
      env.out->flush();
      if (!watch || !*env.out) return exit_code::kOk;
      env.clock->sleep_for(std::chrono::seconds(interval));
    }
  }

  /// The exporter answered but names no pod on the GPUs that running pods asked for: its
  /// pod mapping is off.
  static void warn_unmapped(Env& env, const kube::UsageReport& rep) {
    if (!rep.gpu_source) return;
    for (const auto& p : rep.pods) {
      if (p.phase != "Running" || p.gpus_requested == 0 || !p.gpus.empty()) continue;
      for (const auto& n : rep.nodes) {
        if (n.node == p.node && n.exporter) {
          env.warn("pod " + p.pod + " asks for " + std::to_string(p.gpus_requested) +
                   " GPU(s) but the DCGM exporter on " + p.node +
                   " names no pod on its GPUs (is its Kubernetes pod mapping on? "
                   "DCGM_EXPORTER_KUBERNETES=true)");
          return;
        }
      }
    }
  }

  static ordered_json sources_json(const kube::UsageReport& rep) {
    ordered_json s;
    s["gpu"] = rep.gpu_source;
    s["metrics"] = rep.metrics_source;
    s["missing"] = ordered_json::array();
    if (!rep.gpu_missing.empty()) s["missing"].push_back(rep.gpu_missing);
    if (!rep.metrics_missing.empty()) s["missing"].push_back(rep.metrics_missing);
    return s;
  }

  void print_run(Env& env, const kube::UsageReport& rep, const std::string& ns,
                 const std::string& o) const {
    const std::string kind = rep.pods.empty() ? "" : rep.pods.front().kind;
    if (o == "json") {
      ordered_json j;
      j["run"] = run;
      j["namespace"] = ns;
      j["kind"] = kind.empty() ? ordered_json(nullptr) : ordered_json(kind);
      j["sources"] = sources_json(rep);
      j["ranks"] = ordered_json::array();
      for (const auto& p : rep.pods) {
        ordered_json r;
        r["rank"] = p.rank;
        r["pod"] = p.pod;
        r["node"] = p.node.empty() ? ordered_json(nullptr) : ordered_json(p.node);
        r["phase"] = p.phase;
        r["gpusRequested"] = p.gpus_requested;
        r.update(gpu_totals_json(kube::totals(p.gpus)));
        r["cpuCores"] = number_or_null(p.cpu_cores);
        r["memoryBytes"] = number_or_null(p.memory_bytes, true);
        r["gpus"] = ordered_json::array();
        for (const auto& g : p.gpus) r["gpus"].push_back(gpu_json(g));
        j["ranks"].push_back(std::move(r));
      }
      j["nodes"] = ordered_json::array();
      for (const auto& n : rep.nodes) {
        ordered_json x;
        x["node"] = n.node;
        x["pods"] = n.pods;
        x["exporter"] = n.exporter;
        x.update(gpu_totals_json(kube::totals(n.gpus)));
        x["cpuCores"] = number_or_null(n.cpu_cores);
        x["memoryBytes"] = number_or_null(n.memory_bytes, true);
        j["nodes"].push_back(std::move(x));
      }
      *env.out << j.dump(watch ? -1 : 2) << "\n";
      return;
    }
    const bool service = kind == "serve";
    *env.out << (service ? "Service:    " : "Run:        ") << run << "\n";
    *env.out << "Namespace:  " << ns << "\n";
    std::vector<kube::GpuUsage> all;
    for (const auto& p : rep.pods) all.insert(all.end(), p.gpus.begin(), p.gpus.end());
    const auto t = kube::totals(all);
    if (rep.gpu_source) {
      *env.out << fmt::format("GPUs:       {} on {} node(s), {} busy, {} memory\n", t.count,
                              rep.nodes.size(), percent_text(t.util_percent), gpu_memory_text(t));
    }
    if (rep.pods.empty()) {
      *env.out << "\nNo pods now.\n";
      return;
    }
    *env.out << "\n";
    std::vector<std::vector<std::string>> rows = {{service ? "REPL" : "RANK", "POD", "NODE",
                                                   "PHASE", "GPUS", "GPU%", "GPU MEMORY", "CPU",
                                                   "MEMORY"}};
    for (const auto& p : rep.pods) {
      const auto pt = kube::totals(p.gpus);
      rows.push_back({std::to_string(p.rank), p.pod, p.node.empty() ? "-" : p.node, p.phase,
                      rep.gpu_source ? std::to_string(pt.count) : "-",
                      percent_text(pt.util_percent), gpu_memory_text(pt), cores_text(p.cpu_cores),
                      bytes_text(p.memory_bytes)});
    }
    print_columns(env, rows);
    if (!rep.nodes.empty()) {
      *env.out << "\n";
      std::vector<std::vector<std::string>> nrows = {
          {"NODE", "PODS", "GPUS", "GPU%", "GPU MEMORY", "CPU", "MEMORY"}};
      for (const auto& n : rep.nodes) {
        const auto nt = kube::totals(n.gpus);
        nrows.push_back({n.node, std::to_string(n.pods.size()),
                         n.exporter ? std::to_string(nt.count) : "-", percent_text(nt.util_percent),
                         gpu_memory_text(nt), cores_text(n.cpu_cores), bytes_text(n.memory_bytes)});
      }
      print_columns(env, nrows);
    }
    if (o == "wide" && !all.empty()) {
      *env.out << "\n";
      std::vector<std::vector<std::string>> grows = {
          {service ? "REPL" : "RANK", "NODE", "GPU", "MODEL", "GPU%", "GPU MEMORY", "UUID"}};
      for (const auto& p : rep.pods) {
        for (const auto& g : p.gpus) {
          grows.push_back({std::to_string(p.rank), g.node, g.gpu, g.model.empty() ? "-" : g.model,
                           percent_text(g.util_percent), gpu_memory_text(kube::totals({g})),
                           g.uuid.empty() ? "-" : g.uuid});
        }
      }
      print_columns(env, grows);
    }
  }

  static ordered_json gpu_json(const kube::GpuUsage& g) {
    ordered_json x;
    x["gpu"] = g.gpu;
    x["uuid"] = g.uuid;
    x["model"] = g.model;
    x["utilPercent"] = number_or_null(g.util_percent);
    x["memoryUsedBytes"] = number_or_null(g.used_bytes, true);
    x["memoryTotalBytes"] = number_or_null(g.total_bytes, true);
    return x;
  }

  void print_runs(Env& env, const kube::UsageReport& rep, const std::string& ns,
                  const std::string& o) const {
    auto runs = by_run(rep.pods);
    if (o == "json") {
      ordered_json j;
      j["namespace"] = ns.empty() ? ordered_json(nullptr) : ordered_json(ns);
      j["sources"] = sources_json(rep);
      j["runs"] = ordered_json::array();
      for (const auto& r : runs) {
        ordered_json x;
        x["run"] = r.run;
        x["namespace"] = r.namespace_;
        x["kind"] = r.kind;
        x["pods"] = r.pods;
        x.update(gpu_totals_json(kube::totals(r.gpus)));
        x["cpuCores"] = number_or_null(r.cpu_cores);
        x["memoryBytes"] = number_or_null(r.memory_bytes, true);
        j["runs"].push_back(std::move(x));
      }
      *env.out << j.dump(watch ? -1 : 2) << "\n";
      return;
    }
    if (runs.empty()) {
      *env.err << "No ktrain pods found.\n";
      return;
    }
    std::vector<std::vector<std::string>> rows = {
        {"RUN", "KIND", "PODS", "GPUS", "GPU%", "GPU MEMORY", "CPU", "MEMORY"}};
    if (ns.empty()) rows[0].insert(rows[0].begin(), "NAMESPACE");
    for (const auto& r : runs) {
      const auto t = kube::totals(r.gpus);
      rows.push_back({r.run, r.kind, std::to_string(r.pods),
                      rep.gpu_source ? std::to_string(t.count) : "-", percent_text(t.util_percent),
                      gpu_memory_text(t), cores_text(r.cpu_cores), bytes_text(r.memory_bytes)});
      if (ns.empty()) rows.back().insert(rows.back().begin(), r.namespace_);
    }
    print_columns(env, rows);
  }
};

}  // namespace

void add_top_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<TopOptions>();
  auto* sub = app.add_subcommand(
      "top", "Show how busy a run's GPUs are, per rank and node, with CPU and memory");
  sub->add_option("RUN", opts->run,
                  "The run or service (from submit or list); without it, one line per run");
  opts->target.add_to(*sub);
  sub->add_option("--dcgm", opts->dcgm,
                  "The DCGM exporter's Service (default gpu-operator/nvidia-dcgm-exporter:9400; "
                  "also KTRAIN_DCGM)")
      ->type_name("NAMESPACE/SERVICE:PORT");
  sub->add_flag("-A,--all-namespaces", opts->all_namespaces,
                "Without RUN: the runs of every namespace");
  sub->add_flag("-w,--watch", opts->watch, "Print the figures again every --interval seconds");
  sub->add_option("--interval", opts->interval, "Seconds between refreshes with --watch")
      ->type_name("SECONDS")
      ->default_val(5);
  sub->footer(
      "GPU utilisation and memory come from NVIDIA's DCGM exporter on each node, read through "
      "the API server's pod proxy; CPU and memory from metrics.k8s.io (metrics-server). When "
      "one is missing, the other is shown and stderr says what to install; when both are, "
      "the exit status is 3.");
  sub->callback([opts, &env, &result] { result.status = opts->run_top(env); });
}

}  // namespace ktrain::cmd
