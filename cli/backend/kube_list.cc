// KubeBackend's list and list --watch: ktrain's Jobs, the services' Deployments and
// the operators' objects that the cluster serves, read page by page as summaries.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/kube_backend.h"
#include "backend/kube_shared.h"
#include "base/error.h"
#include "kube/run_state.h"
#include "kube/watch.h"

namespace ktrain::backend {

using nlohmann::json;
using namespace detail;

namespace {

/// The labelSelector of a list: ktrain's objects, of the sweep, matching -l.
std::string list_selector(const ListFilter& f) {
  std::string sel = std::string(kube::kLabelManagedBy) + "=ktrain";
  if (!f.sweep.empty()) sel += std::string(",") + kube::kLabelSweep + "=" + f.sweep;
  if (!f.selector.empty()) sel += "," + f.selector.to_string();
  return sel;
}

void sort_runs(std::vector<RunSummary>& runs) {
  std::stable_sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    if (a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
}

}  // namespace

std::vector<RunSummary> KubeBackend::list(const ListFilter& filter) {
  const auto type = kube::resource_type("batch/v1", "Job");
  const std::string ns = filter.all_namespaces ? "" : client_.default_namespace();
  kube::ListOptions lo;
  lo.label_selector = list_selector(filter);
  lo.limit = 250;
  lo.drop_keys = kSummaryDropKeys;
  std::vector<RunSummary> out;
  client_.list(kube::collection_path(type, ns), lo, [&out](json& job) {
    if (!kube::has_controller(job)) out.push_back(kube::summarize_job(job));
  });
  // And the services (`ktrain serve`): their Deployments. A sweep has none.
  if (filter.sweep.empty()) {
    client_.list(kube::collection_path(kube::resource_type("apps/v1", "Deployment"), ns), lo,
                 [&out](json& d) { out.push_back(kube::summarize_deployment(d)); });
  }
  // And the runs and services of the other targets, whose APIs the cluster serves (one
  // discovery request tells which).
  for (const auto& kind : served_operator_kinds()) {
    if (!filter.sweep.empty() && kind.serve) continue;
    try {
      client_.list(kube::collection_path(kube::resource_type(kind.api_version, kind.kind), ns), lo,
                   [&out, &kind](json& o) {
                     o["kind"] = kind.kind;  // (a list's items may leave it out)
                     out.push_back(kube::summarize_operator(o));
                   });
    } catch (const kube::ApiError& e) {
      // Not ours to list (a Role without the operators' kinds), or gone since discovery.
      if (e.http_status() != 403 && e.http_status() != 404) throw;
    }
  }
  sort_runs(out);
  return out;
}

void KubeBackend::watch_list(const ListFilter& filter,
                             const std::function<bool(const std::vector<RunSummary>&)>& on_change,
                             const std::function<bool()>& cancelled) {
  const std::string ns = filter.all_namespaces ? "" : client_.default_namespace();
  // What is watched: the Jobs, the services' Deployments (not for a sweep), and the
  // operators' kinds that the cluster serves (one discovery request says which).
  struct Source {
    kube::ResourceType type;
    bool optional = false;                   ///< an operator's kind: a 403 or 404 leaves it out
    std::map<std::string, RunSummary> runs;  ///< by uid
    bool listed = false;
  };
  std::vector<Source> sources;
  sources.push_back({kube::resource_type("batch/v1", "Job")});
  if (filter.sweep.empty()) sources.push_back({kube::resource_type("apps/v1", "Deployment")});
  for (const auto& kind : served_operator_kinds()) {
    if (!filter.sweep.empty() && kind.serve) continue;
    sources.push_back({kube::resource_type(kind.api_version, kind.kind), true});
  }

  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t version = 0;
  std::atomic<bool> stop{false};
  std::optional<Error> error;
  auto stopped = [&stop] { return stop.load(); };
  auto guard = [&](const std::function<void()>& f) {
    keep_first_error(mu, cv, error, "watching the runs", f);
  };
  kube::WatchOptions wo;
  wo.label_selector = list_selector(filter);
  wo.drop_keys = kSummaryDropKeys;
  wo.cancelled = stopped;
  auto summarize = [](const Source& src, json& o) {
    if (src.type.kind == "Job") return kube::summarize_job(o);
    if (src.type.kind == "Deployment") return kube::summarize_deployment(o);
    o["kind"] = src.type.kind;  // (a list's items may leave it out)
    return kube::summarize_operator(o);
  };
  std::vector<std::thread> threads;
  for (auto& src : sources) {
    threads.emplace_back([&, srcp = &src] {
      Source& me = *srcp;
      kube::WatchHandlers h;
      h.on_list = [&](std::vector<json>& items) {
        std::lock_guard<std::mutex> lk(mu);
        me.runs.clear();
        for (auto& o : items) {
          if (me.type.kind == "Job" && kube::has_controller(o)) continue;  // a JobSet's
          me.runs[o["metadata"].value("uid", "")] = summarize(me, o);
        }
        me.listed = true;
        ++version;
        cv.notify_all();
      };
      h.on_event = [&](const std::string& type, json& o) {
        std::lock_guard<std::mutex> lk(mu);
        const std::string uid = o["metadata"].value("uid", "");
        if (type == "DELETED") {
          me.runs.erase(uid);
        } else if (me.type.kind != "Job" || !kube::has_controller(o)) {
          me.runs[uid] = summarize(me, o);
        }
        ++version;
        cv.notify_all();
      };
      guard([&] {
        try {
          kube::list_watch(client_, env_, kube::collection_path(me.type, ns), wo, h);
        } catch (const kube::ApiError& e) {
          // Not ours to list (a Role without the operators' kinds), or gone since discovery.
          if (!me.optional || (e.http_status() != 403 && e.http_status() != 404)) throw;
          std::lock_guard<std::mutex> lk(mu);
          me.runs.clear();
          me.listed = true;
          ++version;
          cv.notify_all();
        }
      });
    });
  }
  try {
    std::uint64_t drawn = 0;
    std::optional<std::string> last;
    std::unique_lock<std::mutex> lk(mu);
    while (true) {
      cv.wait_for(lk, std::chrono::milliseconds(100));
      if (cancelled && cancelled()) break;
      if (error) break;
      const bool all_listed =
          std::all_of(sources.begin(), sources.end(), [](const Source& src) { return src.listed; });
      if (!all_listed || version == drawn) continue;
      drawn = version;
      std::vector<RunSummary> runs;
      for (const auto& src : sources) {
        for (const auto& [uid, r] : src.runs) runs.push_back(r);
      }
      lk.unlock();
      sort_runs(runs);
      // Redrawn when what the table shows changes, not for every status update.
      std::string fp;
      for (const auto& r : runs) {
        fp += r.namespace_ + "/" + r.name + " " + to_string(r.state) + " " +
              std::to_string(r.nodes) + "\n";
      }
      if (fp != last) {
        last = std::move(fp);
        if (!on_change(runs)) break;
      }
      lk.lock();
    }
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lk(mu);
    if (!error) error = e;
  }
  stop = true;
  cv.notify_all();
  for (auto& t : threads) t.join();
  if (error) throw *error;
}

}  // namespace ktrain::backend
