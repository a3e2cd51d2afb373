// What every verb of the cluster backend uses: construction, the namespace requests go
// to, which operators' APIs the cluster serves, and finding a run's object by name.
#include "backend/kube_backend.h"

#include <chrono>
#include <iterator>
#include <set>

#include "backend/kube_shared.h"
#include "base/timefmt.h"
#include "kube/run_state.h"

namespace ktrain::backend {

using nlohmann::json;
using nlohmann::ordered_json;

namespace detail {

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

bool is_service_kind(const std::string& kind) {
  return kind == "Deployment" || kind == "InferenceService" || kind == "LeaderWorkerSet";
}

const std::vector<std::string> kSummaryDropKeys = {"managedFields",
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

void keep_first_error(std::mutex& mu, std::condition_variable& cv, std::optional<Error>& error,
                      const std::string& what, const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lk(mu);
    if (!error) error = e;
    cv.notify_all();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu);
    if (!error) error = Error(what + ": " + e.what());
    cv.notify_all();
  }
}

std::optional<std::pair<int, int>> first_failure(const std::vector<json>& pods) {
  std::optional<std::pair<int, int>> out;
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
          when = parse_rfc3339(t.value("finishedAt", ""));
        }
      }
    }
    const bool peer = code == 75;
    auto t = when.value_or(std::chrono::system_clock::time_point::max());
    if (!out || (best_is_peer && !peer) || (peer == best_is_peer && best && t < *best)) {
      out = std::make_pair(idx, code);
      best = t;
      best_is_peer = peer;
    }
  }
  return out;
}

}  // namespace detail

using namespace detail;

Error run_not_found(const std::string& run, const std::string& ns) {
  return Error("run \"" + run + "\" not found in namespace \"" + ns +
               "\" (see 'ktrain list', or pass -n NAMESPACE)");
}

KubeBackend::KubeBackend(kube::Client& client, Env& env) : client_(client), env_(env) {}

KubeBackend::KubeBackend(std::unique_ptr<kube::Connection> connection, Env& env)
    : connection_(std::move(connection)), client_(connection_->client()), env_(env) {}

render::KubeVersion KubeBackend::kube_version() {
  if (!kube_version_) {
    const json v = with_context("asking the API server for its version",
                                [&] { return client_.get("/version"); });
    kube_version_ = render::kube_version_of(v).value_or(render::kNewestTested);
  }
  return *kube_version_;
}

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

void KubeBackend::require_api(const render::targets::Api& api, const std::string& field,
                              const std::string& target) {
  if (api.crd[0] == '\0') return;
  const std::string group_version = api.api_version;
  const auto discovered = client_.get_if_exists("/apis/" + group_version);
  bool served = false;
  if (discovered && discovered->contains("resources") && (*discovered)["resources"].is_array()) {
    for (const auto& r : (*discovered)["resources"]) {
      served = served || (r.is_object() && r.value("name", "") == api.plural);
    }
  }
  if (served) return;
  const auto& c = client_.config();
  const std::string where =
      c.in_cluster ? "this cluster" : "the cluster of context '" + c.context_name + "'";
  throw UsageError(field + " " + target + ": " + where + " does not serve " + api.kind + " (" +
                   group_version + "): the CustomResourceDefinition " + api.crd +
                   " is not installed. Ask the cluster's admin to " + api.install +
                   "; or use the default target, which needs no operator");
}

std::vector<KubeBackend::OperatorKind> KubeBackend::served_operator_kinds() {
  std::vector<OperatorKind> all;
  for (const auto* t : render::targets::train_targets()) {
    if (t->api.crd[0] != '\0') all.push_back({t->api.api_version, t->api.kind, false});
  }
  for (const auto* t : render::targets::serve_targets()) {
    if (t->api.crd[0] != '\0') all.push_back({t->api.api_version, t->api.kind, true});
  }
  std::set<std::string> served;
  const auto groups = client_.get_if_exists("/apis");
  if (groups && groups->contains("groups") && (*groups)["groups"].is_array()) {
    for (const auto& g : (*groups)["groups"]) {
      if (!g.contains("versions") || !g["versions"].is_array()) continue;
      for (const auto& v : g["versions"]) served.insert(v.value("groupVersion", ""));
    }
  }
  std::vector<OperatorKind> out;
  for (auto& k : all) {
    if (served.count(k.api_version)) out.push_back(std::move(k));
  }
  return out;
}

std::optional<KubeBackend::RunObject> KubeBackend::find_first(const std::vector<Lookup>& kinds,
                                                              const std::string& ns,
                                                              const std::string& name) {
  std::vector<net::Request> reqs;
  for (const auto& k : kinds) {
    reqs.push_back(client_.request("GET", kube::object_path(k.type, ns, name)));
  }
  auto resps = client_.send_all(reqs);
  for (size_t i = 0; i < resps.size(); ++i) {
    const auto& r = resps[i];
    if (r.failure == net::TransportFailure::kNone &&
        (r.status == 404 || (kinds[i].optional && r.status == 403))) {
      continue;
    }
    client_.check(reqs[i], r);
    json obj = json::parse(r.body, nullptr, false);
    if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object() ||
        obj["metadata"].value("name", "") != name) {
      continue;
    }
    if (kinds[i].managed && !kube::managed_by_ktrain(obj)) continue;
    obj["kind"] = kinds[i].type.kind;
    return RunObject{kinds[i].type, std::move(obj)};
  }
  return std::nullopt;
}

std::optional<KubeBackend::RunObject> KubeBackend::find_run(const std::string& ns,
                                                            const std::string& run) {
  // In the order of preference: a run's Job, an operator's object, a service's Deployment.
  // Any Job of that name is a run, as before the targets; the others must be ktrain's.
  std::vector<Lookup> kinds{{kube::resource_type("batch/v1", "Job"), false, false}};
  for (size_t i = kFirstOperatorKind; i < std::size(kOwnedKinds); ++i) {
    if (std::string_view(kOwnedKinds[i].kind) == "TrainingRuntime") continue;  // a run's part
    kinds.push_back(
        {kube::resource_type(kOwnedKinds[i].api_version, kOwnedKinds[i].kind), true, true});
  }
  kinds.push_back({kube::resource_type("apps/v1", "Deployment"), false, true});
  return find_first(kinds, ns, run);
}

}  // namespace ktrain::backend
