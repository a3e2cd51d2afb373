#include "backend/kube_backend.h"

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "backend/run_id.h"
#include "base/error.h"
#include "kube/run_state.h"
#include "kube/time.h"
#include "render/render.h"

namespace ktrain::backend {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

/// The kinds a run may own, in the order they are deleted.
struct OwnedKind {
  const char* api_version;
  const char* kind;
  bool optional;  ///< the API may be missing (a CRD that is not installed)
};
constexpr OwnedKind kOwnedKinds[] = {
    {"batch/v1", "Job", false},
    {"v1", "Service", false},
    {"scheduling.volcano.sh/v1beta1", "PodGroup", true},
    {"v1", "Secret", false},
    {"apps/v1", "Deployment", false},
    {"autoscaling/v2", "HorizontalPodAutoscaler", true},
};

/// The step of apply order an object belongs to: Secrets first, then what the Job's
/// pods refer to (Services for DNS, PodGroups for gang scheduling, ConfigMaps), then
/// the workloads.
int apply_step(const std::string& kind) {
  if (kind == "Secret" || kind == "Namespace") return 0;
  if (kind == "Service" || kind == "PodGroup" || kind == "ConfigMap") return 1;
  return 2;
}

std::string label_of(const ordered_json& obj, const char* key) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto labels = md->find("labels");
  if (labels == md->end() || !labels->is_object()) return "";
  auto v = labels->find(key);
  return v != labels->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string name_of(const ordered_json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  return md->value("name", "");
}

/// A run whose objects are not there (the Job is missing).
Error run_not_found(const std::string& run, const std::string& ns) {
  return Error("run \"" + run + "\" not found in namespace \"" + ns +
               "\" (see 'ktrain list', or pass -n NAMESPACE)");
}

}  // namespace

ordered_json rendezvous_secret(const std::string& run, const std::string& ns,
                               const ordered_json& labels, const std::string& token) {
  ordered_json s;
  s["apiVersion"] = "v1";
  s["kind"] = "Secret";
  s["metadata"]["name"] = run + "-rdzv";
  if (!ns.empty()) s["metadata"]["namespace"] = ns;
  s["metadata"]["labels"] = labels;
  s["type"] = "Opaque";
  s["data"]["token"] = kube::base64_encode(token);
  return s;
}

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw Error("cannot make a random rendezvous token: OpenSSL RAND_bytes failed");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

KubeBackend::KubeBackend(kube::Client& client, Env& env) : client_(client), env_(env) {}

KubeBackend::KubeBackend(std::unique_ptr<kube::Connection> connection, Env& env)
    : connection_(std::move(connection)), client_(connection_->client()), env_(env) {}

std::string KubeBackend::namespace_for(const project::Project& project) const {
  if (!env_.global.namespace_.empty()) {
    if (!project.namespace_.empty() && project.namespace_ != env_.global.namespace_) {
      throw UsageError("-n " + env_.global.namespace_ + ": the project file sets namespace '" +
                       project.namespace_ + "'; pass -n " + project.namespace_ +
                       " or change the project file");
    }
    return env_.global.namespace_;
  }
  if (!project.namespace_.empty()) return project.namespace_;
  return client_.default_namespace();
}

std::vector<std::string> KubeBackend::apply_objects(const std::vector<ordered_json>& objects,
                                                    bool dry_run) {
  const std::string ns = client_.default_namespace();
  std::vector<std::string> refs;
  kube::ApplyOptions apply_opts;
  apply_opts.dry_run = dry_run;
  for (int step = 0; step <= 2; ++step) {
    std::vector<net::Request> reqs;
    std::vector<std::string> step_refs;
    for (const auto& obj : objects) {
      const std::string kind = obj.value("kind", "");
      if (apply_step(kind) != step) continue;
      const auto type = kube::resource_type(obj.value("apiVersion", ""), kind);
      step_refs.push_back(kube::object_ref(type, name_of(obj)));
      if (kind == "Secret") {
        // Created once: a second submit keeps the token the running pods already have.
        std::string obj_ns = ns;
        if (auto md = obj.find("metadata"); md != obj.end() && md->contains("namespace")) {
          obj_ns = (*md)["namespace"].get<std::string>();
        }
        kube::Query q{{"fieldManager", "ktrain"}};
        if (dry_run) q.emplace_back("dryRun", "All");
        auto req = client_.request("POST", kube::collection_path(type, obj_ns), q);
        req.headers.emplace_back("Content-Type", "application/json");
        req.body = obj.dump();
        req.idempotent = true;  // a repeated create answers 409, which means done
        reqs.push_back(std::move(req));
      } else {
        reqs.push_back(client_.apply_request(obj, ns, apply_opts));
      }
    }
    if (reqs.empty()) continue;
    auto resps = client_.send_all(reqs);
    std::vector<std::string> problems;
    std::optional<Error> first;
    for (size_t i = 0; i < resps.size(); ++i) {
      if (reqs[i].method == "POST" && resps[i].failure == net::TransportFailure::kNone &&
          resps[i].status == 409) {
        continue;
      }
      try {
        client_.check(reqs[i], resps[i]);
      } catch (const Error& e) {
        Error wrapped = e.wrapped("applying " + step_refs[i]);
        if (!first) first = wrapped;
        problems.push_back(wrapped.what());
      }
    }
    if (first) {
      if (problems.size() == 1) throw *first;
      std::string msg = std::to_string(problems.size()) + " objects were refused:";
      for (const auto& p : problems) msg += "\n  " + p;
      throw Error(msg, first->exit_status());
    }
    refs.insert(refs.end(), step_refs.begin(), step_refs.end());
  }
  return refs;
}

SubmitResult KubeBackend::submit(const project::Project& project, const SubmitOptions& opts) {
  if (!project.train) {
    throw UsageError(project.file +
                     ": there is no train section to submit (use 'ktrain serve' "
                     "for the serve section)");
  }
  const std::string ns = namespace_for(project);
  render::RenderOptions ro;
  ro.run_id = opts.run_id.empty() ? random_run_id() : opts.run_id;
  render::Rendered rendered = render::render_project(project, ro);
  for (const auto& w : rendered.warnings) env_.warn(w);
  const auto names = render::run_names(project, ro.run_id);
  const std::set<std::string> runs(names.begin(), names.end());

  std::vector<ordered_json> objects;
  for (auto& obj : rendered.objects) {
    const std::string run = label_of(obj, kRunLabel);
    if (!runs.count(run)) continue;  // the serve objects
    if (obj["metadata"].is_object() && !obj["metadata"].contains("namespace")) {
      obj["metadata"]["namespace"] = ns;
    }
    if (obj.value("kind", "") == "Job") {
      objects.push_back(rendezvous_secret(run, ns, obj["metadata"]["labels"], random_token()));
    }
    objects.push_back(std::move(obj));
  }
  SubmitResult result;
  result.runs = names;
  result.objects = with_context(opts.dry_run_server ? "submitting (server dry run)" : "submitting",
                                [&] { return apply_objects(objects, opts.dry_run_server); });
  return result;
}

std::vector<RunSummary> KubeBackend::list(bool all_namespaces) {
  const auto type = kube::resource_type("batch/v1", "Job");
  const std::string ns = all_namespaces ? "" : client_.default_namespace();
  kube::ListOptions lo;
  lo.label_selector = std::string(kube::kLabelManagedBy) + "=ktrain";
  lo.limit = 250;
  // What a summary does not need, dropped while each page is parsed.
  lo.drop_keys = {"managedFields",
                  "annotations",
                  "env",
                  "envFrom",
                  "command",
                  "args",
                  "volumeMounts",
                  "volumes",
                  "affinity",
                  "tolerations",
                  "podFailurePolicy",
                  "securityContext",
                  "nodeSelector",
                  "uncountedTerminatedPods"};
  std::vector<RunSummary> out;
  client_.list(kube::collection_path(type, ns), lo,
               [&out](json& job) { out.push_back(kube::summarize_job(job)); });
  std::stable_sort(out.begin(), out.end(), [](const RunSummary& a, const RunSummary& b) {
    if (a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
  return out;
}

RunStatus KubeBackend::status(const std::string& run) {
  const std::string ns = client_.default_namespace();
  const auto job_type = kube::resource_type("batch/v1", "Job");
  auto job = client_.get_if_exists(kube::object_path(job_type, ns, run));
  if (!job) throw run_not_found(run, ns);

  std::vector<json> pods, events;
  kube::ListOptions lo;
  lo.label_selector = std::string(kube::kLabelRun) + "=" + run;
  lo.drop_keys = {"managedFields", "env", "envFrom", "volumeMounts", "volumes"};
  client_.list(kube::collection_path(kube::resource_type("v1", "Pod"), ns), lo,
               [&pods](json& p) { pods.push_back(std::move(p)); });
  // Only the events about the Job and its pods are used; the field selector narrows the
  // list on servers that support it and describe_run filters again.
  std::set<std::string> names{run};
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
  RunStatus st = kube::describe_run(*job, pods, events);

  // The rank that failed first: the earliest finish among failed ranks, a peer's
  // "stopped because another rank failed" (exit 75) only when nothing else failed.
  std::optional<std::chrono::system_clock::time_point> best;
  bool best_is_peer = true;
  for (const auto& p : pods) {
    const int idx = kube::pod_rank(p);
    if (idx < 0 || p["status"].value("phase", "") != "Failed") continue;
    std::optional<std::chrono::system_clock::time_point> when;
    int code = -1;
    if (p["status"].contains("containerStatuses")) {
      for (const auto& cs : p["status"]["containerStatuses"]) {
        if (cs.contains("state") && cs["state"].contains("terminated")) {
          const auto& t = cs["state"]["terminated"];
          code = t.value("exitCode", -1);
          when = kube::parse_time(t.value("finishedAt", ""));
        }
      }
    }
    const bool peer = code == 75;
    auto t = when.value_or(std::chrono::system_clock::time_point::max());
    if (st.first_failed < 0 || (best_is_peer && !peer) ||
        (peer == best_is_peer && best && t < *best)) {
      st.first_failed = idx;
      best = t;
      best_is_peer = peer;
    }
  }
  return st;
}

void KubeBackend::logs(const std::string& run, const LogOptions& opts, const LogSink& sink) {
  const std::string ns = client_.default_namespace();
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
    if (!client_.get_if_exists(
            kube::object_path(kube::resource_type("batch/v1", "Job"), ns, run))) {
      throw run_not_found(run, ns);
    }
    return;  // no pod yet
  }
  if (opts.node && !newest.count(*opts.node)) {
    throw UsageError("--node " + std::to_string(*opts.node) + ": run \"" + run +
                     "\" has no pod with that index (it has " + std::to_string(newest.size()) +
                     ")");
  }

  kube::Query base{{"container", opts.container.empty() ? kube::kTrainContainer : opts.container},
                   {"timestamps", "true"}};
  if (opts.tail) base.emplace_back("tailLines", std::to_string(*opts.tail));
  if (opts.since) base.emplace_back("sinceTime", kube::format_time(*opts.since));
  if (opts.previous) base.emplace_back("previous", "true");
  const std::string rank_prefix =
      opts.rank ? "[rank " + std::to_string(*opts.rank) + "]" : std::string();

  // Splits "TIMESTAMP text" and filters by worker rank; false when the sink says stop.
  auto emit = [&](int node, std::string_view raw) {
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

  if (!opts.follow) {
    std::vector<net::Request> reqs;
    for (int idx : nodes) {
      const auto& pod = newest[idx];
      auto req = client_.request(
          "GET", kube::object_path(pod_type, ns, pod["metadata"].value("name", ""), "log"), base);
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

  // Follow: every node's stream at once; lines reach the sink one at a time.
  std::mutex sink_mu;
  std::atomic<bool> stop{false};
  std::vector<std::optional<Error>> errors(nodes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back([&, i] {
      const int idx = nodes[i];
      const std::string pod = newest[idx]["metadata"].value("name", "");
      kube::Query q = base;
      q.emplace_back("follow", "true");
      try {
        client_.stream_lines(kube::object_path(pod_type, ns, pod, "log"), q,
                             [&](std::string_view raw) {
                               if (stop) return false;
                               std::lock_guard<std::mutex> lock(sink_mu);
                               if (!emit(idx, raw)) {
                                 stop = true;
                                 return false;
                               }
                               return true;
                             });
      } catch (const Error& e) {
        errors[i] = e;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) throw *e;
  }
}

void KubeBackend::remove(const std::string& run) {
  const std::string ns = client_.default_namespace();
  kube::ListOptions lo;
  lo.label_selector = std::string(kRunLabel) + "=" + run;
  lo.drop_keys = {"managedFields", "spec", "status", "data", "annotations"};
  std::vector<net::Request> deletes;
  for (const auto& k : kOwnedKinds) {
    const auto type = kube::resource_type(k.api_version, k.kind);
    try {
      client_.list(kube::collection_path(type, ns), lo, [&](json& obj) {
        deletes.push_back(
            client_.delete_request(kube::object_path(type, ns, obj["metadata"].value("name", ""))));
      });
    } catch (const kube::ApiError& e) {
      if (k.optional && e.http_status() == 404) continue;  // the CRD is not installed
      throw e.wrapped("deleting run \"" + run + "\"");
    }
  }
  if (deletes.empty()) throw run_not_found(run, ns);
  auto resps = client_.send_all(deletes);
  for (size_t i = 0; i < resps.size(); ++i) {
    if (resps[i].failure == net::TransportFailure::kNone && resps[i].status == 404) continue;
    with_context("deleting run \"" + run + "\"", [&] { client_.check(deletes[i], resps[i]); });
  }
}

}  // namespace ktrain::backend
