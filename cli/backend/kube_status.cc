// KubeBackend's status: a run's (or service's) object, its pods and the events about
// them read once or watched until the run ends, and the runs of a sweep with their
// parameters and exit codes.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "backend/kube_backend.h"
#include "backend/kube_shared.h"
#include "backend/run_id.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/run_events.h"
#include "kube/run_state.h"
#include "kube/streams.h"
#include "kube/watch.h"
#include "render/render.h"

namespace ktrain::backend {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace detail;

RunStatus KubeBackend::status(const std::string& run) {
  const std::string ns = client_.default_namespace();
  auto found = find_run(ns, run);
  if (!found) throw run_not_found(run, ns);
  std::vector<json> pods;
  kube::ListOptions lo;
  lo.label_selector = std::string(kube::kLabelRun) + "=" + run;
  lo.drop_keys = {"managedFields", "env", "envFrom", "volumeMounts", "volumes"};
  client_.list(kube::collection_path(kube::resource_type("v1", "Pod"), ns), lo,
               [&pods](json& p) { pods.push_back(std::move(p)); });
  if (is_service_kind(found->type.kind)) return kube::describe_service(found->object, pods);
  return describe(ns, run, found->object, pods);
}

namespace {

/// What was written to `fd` (a memfd), from its start; at most `max` bytes.
std::string read_back(int fd, std::size_t max) {
  std::string out;
  if (::lseek(fd, 0, SEEK_SET) < 0) return out;
  char buf[4096];
  while (out.size() < max) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out.substr(0, max);
}

/// The first line of `text`, without its end.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

void KubeBackend::read_checkpoint(RunStatus& st) {
  // The lowest running rank: the checkpoint folder is the run's volume, the same in
  // every pod that mounts it.
  const RankStatus* rank = nullptr;
  for (const auto& r : st.ranks) {
    if (r.phase == "Running" && (!rank || r.index < rank->index)) rank = &r;
  }
  if (!rank || rank->pod.empty()) return;
  const std::string ns = client_.default_namespace();
  json pod;
  try {
    pod = client_.get(kube::object_path(kube::resource_type("v1", "Pod"), ns, rank->pod));
  } catch (const kube::ApiError&) {
    return;  // gone since the list: nothing to ask
  }
  const auto query = kube::checkpoint_query(pod);
  if (!query) return;  // no checkpoint volume, or not ktrain-launch's container
  const std::string where = "node " + std::to_string(rank->index) + " (" + rank->pod + ")";
  // The launcher's answer and its complaints, kept apart.
  const int out = ::memfd_create("ktrain-checkpoint", MFD_CLOEXEC);
  const int err = ::memfd_create("ktrain-checkpoint-err", MFD_CLOEXEC);
  if (out < 0 || err < 0) {
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
    return;
  }
  kube::ExecRequest req;
  req.ns = ns;
  req.pod = rank->pod;
  req.container = query->container;
  req.command = query->command;
  req.out_fd = out;
  req.err_fd = err;
  req.timeout = std::chrono::seconds(10);
  try {
    const kube::ExecResult r = kube::exec(client_, req);
    const std::string answer = read_back(out, 64 * 1024);
    if (r.exit_code != 0) {
      std::string why = first_line(read_back(err, 4096));
      if (why.empty()) why = r.message;
      if (why.empty()) why = "exit " + std::to_string(r.exit_code);
      st.checkpoint_note =
          "not known: ktrain-launch --latest-checkpoint in " + where + " failed (" + why + ")";
    } else if (auto seen = kube::parse_latest_checkpoint(answer)) {
      st.checkpoint = seen->path;
      st.checkpoint_written = seen->written;
    } else if (answer.empty()) {
      st.checkpoint_note = "none yet in " + query->dir;
    } else {
      st.checkpoint_note = "not known: " + where + " answered \"" + first_line(answer) +
                           "\" (an older ktrain-launch?)";
    }
  } catch (const kube::ApiError& e) {
    // No pods/exec here (RBAC), or the pod ended since the list.
    st.checkpoint_note =
        "not known: cannot run a command in " + where + " (" + first_line(e.what()) + ")";
  } catch (const Error& e) {
    st.checkpoint_note = "not known: " + first_line(e.what());
  }
  ::close(out);
  ::close(err);
}

std::vector<SweepRun> KubeBackend::sweep_runs(const std::string& sweep) {
  const std::string ns = client_.default_namespace();
  const std::string selector =
      std::string(kube::kLabelManagedBy) + "=ktrain," + kube::kLabelSweep + "=" + sweep;
  kube::ListOptions lo;
  lo.label_selector = selector;
  lo.limit = 250;
  // As for list, but the annotations stay: they hold each run's combination.
  lo.drop_keys = kSummaryDropKeys;
  std::erase(lo.drop_keys, std::string("annotations"));
  std::vector<SweepRun> out;
  // A run of the sweep: its Job, or its operator's object (train.target).
  auto add = [&out](json& obj, const std::string& kind) {
    SweepRun r;
    if (kind == "Job") {
      r.summary = kube::summarize_job(obj);
    } else {
      obj["kind"] = kind;  // (a list's items may leave it out)
      r.summary = kube::summarize_operator(obj);
    }
    const auto& md = obj["metadata"];
    if (md.contains("annotations") && md["annotations"].is_object()) {
      const std::string params = md["annotations"].value(render::kAnnotationParams, "");
      try {
        const auto j = ordered_json::parse(params.empty() ? "{}" : params);  // file order
        for (const auto& [k, v] : j.items()) {
          if (v.is_string()) r.params.emplace_back(k, v.get<std::string>());
        }
      } catch (const std::exception&) {
      }
    }
    const auto& st = obj["status"];
    if (st.is_object()) {
      r.started = parse_rfc3339(st.value("startTime", ""));
      r.finished = parse_rfc3339(st.value("completionTime", ""));
      if (!r.finished && st.contains("conditions") && st["conditions"].is_array()) {
        for (const auto& c : st["conditions"]) {
          // The ending conditions, set before completionTime is (the Job's, and the
          // operators': Succeeded, Completed).
          const std::string type = c.value("type", "");
          if ((type == "Failed" || type == "FailureTarget" || type == "Complete" ||
               type == "SuccessCriteriaMet" || type == "Succeeded" || type == "Completed") &&
              c.value("status", "") == "True" && !r.finished) {
            r.finished = parse_rfc3339(c.value("lastTransitionTime", ""));
          }
        }
      }
    }
    if (r.summary.state == RunState::kSucceeded) r.exit_code = 0;
    out.push_back(std::move(r));
  };
  client_.list(kube::collection_path(kube::resource_type("batch/v1", "Job"), ns), lo,
               [&add](json& job) {
                 if (!kube::has_controller(job)) add(job, "Job");
               });
  // A sweep of another train.target: the operators' objects, of the kinds the cluster
  // serves (none listed when the sweep's runs are Jobs).
  if (out.empty()) {
    for (const auto& kind : served_operator_kinds()) {
      if (kind.serve) continue;
      try {
        client_.list(kube::collection_path(kube::resource_type(kind.api_version, kind.kind), ns),
                     lo, [&add, &kind](json& o) { add(o, kind.kind); });
      } catch (const kube::ApiError& e) {
        if (e.http_status() != 403 && e.http_status() != 404) throw;
      }
      if (!out.empty()) break;  // one sweep, one target
    }
  }
  if (out.empty()) return out;
  // The exit codes of failed runs, from their pods.
  bool any_failed = false;
  for (const auto& r : out) any_failed = any_failed || r.summary.state == RunState::kFailed;
  if (any_failed) {
    std::map<std::string, std::vector<json>> pods;  // by run
    kube::ListOptions po;
    po.label_selector = selector;
    po.limit = 500;
    po.drop_keys = {"managedFields", "spec", "conditions"};
    client_.list(kube::collection_path(kube::resource_type("v1", "Pod"), ns), po, [&pods](json& p) {
      const auto& l = p["metadata"]["labels"];
      const std::string run = l.is_object() ? l.value(kube::kLabelRun, "") : "";
      pods[run].push_back(std::move(p));
    });
    for (auto& r : out) {
      if (r.summary.state != RunState::kFailed) continue;
      if (auto first = first_failure(pods[r.summary.name]); first && first->second >= 0) {
        r.exit_code = first->second;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const SweepRun& a, const SweepRun& b) {
    return before_in_sweep(a.summary.name, b.summary.name);
  });
  return out;
}

RunStatus KubeBackend::describe(const std::string& ns, const std::string& run, const json& job,
                                const std::vector<json>& pods) {
  std::vector<json> events;
  // Only the events about the Job and its pods are used; the field selector narrows the
  // list on servers that support it and describe_run filters again.
  std::set<std::string> names{run};
  // The one Job of a JobSet's (a TrainJob's JobSet's) replicated job "node".
  if (const std::string kind = job.value("kind", ""); kind == "JobSet" || kind == "TrainJob") {
    names.insert(run + "-node-0");
  }
  for (const auto& p : pods) names.insert(p["metadata"].value("name", ""));
  kube::ListOptions eo;
  eo.limit = 500;
  for (const auto& name : names) {
    eo.field_selector = "involvedObject.name=" + name;
    client_.list(kube::collection_path(kube::resource_type("v1", "Event"), ns), eo,
                 [&events, &name](json& e) {
                   if (e["involvedObject"].value("name", "") == name) {
                     events.push_back(std::move(e));
                   }
                 });
  }
  // A pod that no node's driver may run (its CUDA version's node affinity): the nodes'
  // labels say which drivers there are. Users who may not list nodes go without.
  std::vector<json> nodes;
  if (std::any_of(pods.begin(), pods.end(), kube::waits_for_cuda_node)) {
    try {
      kube::ListOptions no;
      no.limit = 500;
      no.drop_keys = {"managedFields", "images", "conditions", "volumesAttached", "volumesInUse"};
      client_.list(kube::collection_path(kube::resource_type("v1", "Node"), ""), no,
                   [&nodes](json& n) { nodes.push_back(std::move(n)); });
    } catch (const kube::ApiError& e) {
      if (e.http_status() != 403) throw;
      nodes.clear();
    }
  }
  RunStatus st = kube::describe_run(job, pods, events, std::chrono::system_clock::now(), nodes);
  st.events = kube::run_events(events);

  if (auto first = first_failure(pods)) st.first_failed = first->first;
  return st;
}

void KubeBackend::watch_status(const std::string& run, const StatusCallback& on_change,
                               const std::function<bool()>& cancelled) {
  const std::string ns = client_.default_namespace();
  // The object to watch beside the pods: the run's Job, its operator's object, or a
  // service's Deployment.
  const auto found = find_run(ns, run);
  if (!found) throw run_not_found(run, ns);
  const kube::ResourceType workload = found->type;
  const bool service = is_service_kind(workload.kind);
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, json> pods;  // by uid
  std::optional<json> job;
  bool pods_listed = false, job_listed = false;
  std::uint64_t version = 0;
  std::atomic<bool> stop{false};
  std::optional<Error> error;
  auto stopped = [&stop] { return stop.load(); };
  auto changed = [&] {
    ++version;
    cv.notify_all();
  };
  auto guard = [&](const std::function<void()>& f) {
    keep_first_error(mu, cv, error, "watching the run", f);
  };

  kube::WatchOptions pod_watch;
  pod_watch.label_selector = std::string(kube::kLabelRun) + "=" + run;
  pod_watch.drop_keys = {"managedFields", "env", "envFrom", "volumeMounts", "volumes"};
  pod_watch.cancelled = stopped;
  kube::WatchHandlers pod_handlers;
  pod_handlers.on_list = [&](std::vector<json>& items) {
    std::lock_guard<std::mutex> lk(mu);
    pods.clear();
    for (auto& p : items) {
      std::string uid = p["metadata"].value("uid", "");
      pods[uid] = std::move(p);
    }
    pods_listed = true;
    changed();
  };
  pod_handlers.on_event = [&](const std::string& type, json& p) {
    std::lock_guard<std::mutex> lk(mu);
    const std::string uid = p["metadata"].value("uid", "");
    if (type == "DELETED") {
      pods.erase(uid);
    } else {
      pods[uid] = std::move(p);
    }
    changed();
  };
  kube::WatchOptions job_watch;
  job_watch.field_selector = "metadata.name=" + run;
  job_watch.drop_keys = {"managedFields"};
  job_watch.cancelled = stopped;
  kube::WatchHandlers job_handlers;
  job_handlers.on_list = [&](std::vector<json>& items) {
    std::lock_guard<std::mutex> lk(mu);
    if (items.empty()) {
      job.reset();
    } else {
      job = std::move(items.front());
    }
    job_listed = true;
    changed();
  };
  job_handlers.on_event = [&](const std::string& type, json& j) {
    std::lock_guard<std::mutex> lk(mu);
    if (type == "DELETED") {
      job.reset();
    } else {
      job = std::move(j);
    }
    changed();
  };

  const std::string pods_path = kube::collection_path(kube::resource_type("v1", "Pod"), ns);
  const std::string jobs_path = kube::collection_path(workload, ns);
  std::thread pod_thread(
      [&] { guard([&] { kube::list_watch(client_, env_, pods_path, pod_watch, pod_handlers); }); });
  std::thread job_thread(
      [&] { guard([&] { kube::list_watch(client_, env_, jobs_path, job_watch, job_handlers); }); });

  bool seen_job = false;
  std::optional<Error> outcome;
  try {
    std::uint64_t drawn = 0;
    std::string last;
    std::unique_lock<std::mutex> lk(mu);
    while (true) {
      cv.wait_for(lk, std::chrono::milliseconds(100));
      if (cancelled && cancelled()) break;
      if (error) break;
      if (!pods_listed || !job_listed || version == drawn) continue;
      drawn = version;
      if (!job) {
        if (seen_job) throw Error("run \"" + run + "\" was deleted");
        throw run_not_found(run, ns);
      }
      seen_job = true;
      json job_now = *job;
      job_now["kind"] = workload.kind;  // (a list's items may leave it out)
      std::vector<json> pods_now;
      pods_now.reserve(pods.size());
      for (const auto& [uid, p] : pods) pods_now.push_back(p);
      lk.unlock();
      RunStatus st = service ? kube::describe_service(job_now, pods_now)
                             : describe(ns, run, job_now, pods_now);
      std::string fp = status_fingerprint(st);
      const bool ended =
          st.summary.state == RunState::kSucceeded || st.summary.state == RunState::kFailed;
      if (fp != last) {
        last = std::move(fp);
        if (!on_change(st)) break;
      }
      if (ended) break;
      lk.lock();
    }
  } catch (const Error& e) {
    outcome = e;
  }
  stop = true;
  cv.notify_all();
  pod_thread.join();
  job_thread.join();
  if (outcome) throw *outcome;
  if (error) throw *error;
}

}  // namespace ktrain::backend
