#include "backend/kube_backend.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "backend/kube_follow.h"
#include "backend/log_line.h"
#include "backend/run_id.h"
#include "base/error.h"
#include "base/random.h"
#include "base/timefmt.h"
#include "kube/run_state.h"
#include "kube/watch.h"
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
    {"apps/v1", "Deployment", false},
    {"autoscaling/v2", "HorizontalPodAutoscaler", true},
    {"policy/v1", "PodDisruptionBudget", true},
    // The operators' objects (train.target, serve.target): their CRDs may be missing.
    {"kubeflow.org/v1", "PyTorchJob", true},
    {"kubeflow.org/v1", "TFJob", true},
    {"kubeflow.org/v1", "MPIJob", true},
    {"trainer.kubeflow.org/v1alpha1", "TrainJob", true},
    {"jobset.x-k8s.io/v1alpha2", "JobSet", true},
    {"serving.kserve.io/v1beta1", "InferenceService", true},
    {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", true},
    // A TrainJob's own runtime (a stock image's, with the launcher's init container):
    // owned by the run, never a run itself.
    {"trainer.kubeflow.org/v1alpha1", "TrainingRuntime", true},
};

/// Where the operators' kinds start in kOwnedKinds.
constexpr size_t kFirstOperatorKind = 6;
static_assert(std::string_view(kOwnedKinds[kFirstOperatorKind].kind) == "PyTorchJob");

/// The step of apply order an object belongs to: what the Job's pods refer to
/// (Services for DNS, PodGroups for gang scheduling, ConfigMaps), then the rendezvous
/// Secret (owned by the run's Service from its creation: see PreparedObject), then the
/// workloads.
int apply_step(const std::string& kind) {
  if (kind == "Namespace") return 0;
  if (kind == "Service" || kind == "PodGroup" || kind == "ConfigMap" || kind == "TrainingRuntime") {
    return 1;
  }
  if (kind == "Secret") return 2;
  return 3;
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

/// A stop of the feed's consumer, thrown through render_each to end the render.
struct FeedStopped {};

}  // namespace

bool PreparedFeed::push(Group group) {
  std::unique_lock<std::mutex> lk(mu_);
  space_.wait(lk, [&] { return stopped_ || queued_ < kMaxQueued; });
  if (stopped_) return false;
  queued_ += group.size();
  groups_.push_back(std::move(group));
  ready_.notify_all();
  return true;
}

void PreparedFeed::close(std::exception_ptr error) {
  std::lock_guard<std::mutex> lk(mu_);
  closed_ = true;
  error_ = std::move(error);
  ready_.notify_all();
}

bool PreparedFeed::take(std::deque<Group>& out, size_t at_least) {
  std::unique_lock<std::mutex> lk(mu_);
  ready_.wait(lk, [&] { return closed_ || queued_ >= at_least; });
  const bool any = !groups_.empty();
  for (auto& g : groups_) out.push_back(std::move(g));
  groups_.clear();
  queued_ = 0;
  space_.notify_all();
  return any || !closed_;
}

void PreparedFeed::stop() {
  std::lock_guard<std::mutex> lk(mu_);
  stopped_ = true;
  space_.notify_all();
}

std::exception_ptr PreparedFeed::error() {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

namespace {

/// The feed of one vector of objects, all in one group.
void feed_all(PreparedFeed& feed, std::vector<KubeBackend::PreparedObject>& objects) {
  PreparedFeed::Group group;
  group.reserve(objects.size());
  for (auto& o : objects) group.push_back(std::move(o));
  if (!group.empty()) feed.push(std::move(group));
  feed.close();
}

}  // namespace

/// Whether objects of `kind` are a service's (ktrain serve), not a run's.
static bool is_service_kind(const std::string& kind) {
  return kind == "Deployment" || kind == "InferenceService" || kind == "LeaderWorkerSet";
}

Error run_not_found(const std::string& run, const std::string& ns) {
  return Error("run \"" + run + "\" not found in namespace \"" + ns +
               "\" (see 'ktrain list', or pass -n NAMESPACE)");
}

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

std::vector<ordered_json> with_rendezvous_secrets(std::vector<ordered_json> objects) {
  std::map<std::string, const ordered_json*> jobs;  // run -> its Job
  for (const auto& o : objects) {
    const std::string run = label_of(o, kRunLabel);
    if (run.empty()) continue;
    // The workloads whose pods run ktrain-launch's rendezvous (not an MPIJob's).
    for (const auto* t : render::targets::train_targets()) {
      if (t->rendezvous && o.value("kind", "") == t->api.kind) jobs.emplace(run, &o);
    }
  }
  std::vector<ordered_json> out;
  out.reserve(objects.size() + jobs.size());
  std::set<std::string> done;
  for (auto& o : objects) {
    const std::string run = label_of(o, kRunLabel);
    if (auto j = jobs.find(run); j != jobs.end() && done.insert(run).second) {
      const auto& md = (*j->second)["metadata"];
      ordered_json labels = md["labels"];
      labels.erase(render::kLabelQueued);  // the Job's state, not the Secret's
      out.push_back(rendezvous_secret(run, md.value("namespace", ""), labels, random_token()));
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string random_token() {
  return random_hex(32);
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

KubeBackend::PreparedObject KubeBackend::prepare(const ordered_json& obj, bool dry_run) const {
  const std::string ns = client_.default_namespace();
  PreparedObject p;
  const std::string kind = obj.value("kind", "");
  p.step = apply_step(kind);
  const auto type = kube::resource_type(obj.value("apiVersion", ""), kind);
  p.ref = kube::object_ref(type, name_of(obj));
  std::string obj_ns = ns;
  if (auto md = obj.find("metadata"); md != obj.end() && md->contains("namespace")) {
    obj_ns = (*md)["namespace"].get<std::string>();
  }
  p.path = kube::object_path(type, obj_ns, name_of(obj));
  const bool of_run = !label_of(obj, kRunLabel).empty();
  // The workloads own the rest of their group: a Job or Deployment, or an operator's object.
  bool workload = kind == "Job" || kind == "Deployment";
  for (const auto* t : render::targets::train_targets()) workload = workload || kind == t->api.kind;
  for (const auto* t : render::targets::serve_targets()) workload = workload || kind == t->api.kind;
  if (of_run && workload) {
    p.owner_kind = kind;
    p.owner_api = obj.value("apiVersion", "");
  }
  p.owned = of_run && (kind == "Service" || kind == "PodGroup" || kind == "TrainingRuntime" ||
                       kind == "HorizontalPodAutoscaler" || kind == "PodDisruptionBudget");
  // A Job's run: its Service owns the Secret (created after it); an operator's run has
  // no Service of ktrain's, and its object owns the Secret (created after it: the pods
  // wait for it as the kubelet waits for any Secret).
  if (of_run && (kind == "Service" || (workload && kind != "Job" && kind != "Deployment"))) {
    p.owns_secret = true;
    p.secret_owner_api = obj.value("apiVersion", "");
    p.secret_owner_kind = kind;
  }
  p.secret = of_run && kind == "Secret";
  if (kind == "Secret") {
    // Created once: a second submit keeps the token the running pods already have.
    p.spec.method = "POST";
    p.spec.path = kube::collection_path(type, obj_ns);
    p.spec.query = {{"fieldManager", "ktrain"}};
    if (dry_run) p.spec.query.emplace_back("dryRun", "All");
    p.spec.content_type = "application/json";
    p.spec.body = obj.dump();
    p.spec.idempotent = true;  // a repeated create answers 409, which means done
  } else {
    kube::ApplyOptions apply_opts;
    apply_opts.dry_run = dry_run;
    p.spec = client_.apply_spec(obj, ns, apply_opts);
  }
  // The answer is only checked (its status, and the Status of an error): the whole
  // object back for each of thousands would cost both sides more than the request.
  p.spec.accept = kube::kAcceptMetadataOnly;
  return p;
}

std::vector<std::string> KubeBackend::apply_objects(const std::vector<ordered_json>& objects,
                                                    bool dry_run) {
  std::vector<PreparedObject> prepared;
  prepared.reserve(objects.size());
  for (const auto& obj : objects) prepared.push_back(prepare(obj, dry_run));
  return apply_prepared(prepared, dry_run);
}

std::vector<std::string> KubeBackend::apply_prepared(std::vector<PreparedObject>& prepared,
                                                     bool dry_run) {
  PreparedFeed feed;
  feed_all(feed, prepared);
  return apply_feed(feed, dry_run);
}

std::vector<std::string> KubeBackend::apply_feed(PreparedFeed& feed, bool dry_run,
                                                 const std::function<void(std::size_t)>& on_sent) {
  // At most this many requests at once; each batch is answered before the next goes,
  // and a group has at most one step in a batch: a run's Job goes only once its Secret
  // and Service are there. A batch takes the groups in the order they came, so a sweep
  // goes run after run (128 Secrets, their Services, their Jobs, the next 128 ...)
  // while it is still being rendered.
  constexpr size_t kBatch = 128;
  struct Active {
    PreparedFeed::Group objects;       ///< sorted by step
    std::vector<std::uint64_t> order;  ///< each object's place in the feed
    size_t next = 0;                   ///< the first not sent
    size_t end = 0;                    ///< past the last in the batch being sent
  };
  std::deque<Active> active;
  std::uint64_t fed = 0;
  bool more = true;
  // Once a group's Job is there, its Secret, Service and PodGroup get the Job as
  // owner (a last step of the group): a merge patch of ownerReferences alone, which
  // changes nothing when they have it already.
  auto add_owner_patches = [&](Active& a, size_t job_index, const net::Response& resp) {
    std::string uid;
    try {
      uid = ordered_json::parse(resp.body).at("metadata").at("uid").get<std::string>();
    } catch (const std::exception&) {
      return;  // an answer without the uid: nothing to own them by
    }
    const PreparedObject& owner = a.objects[job_index];
    const std::string owner_name = owner.ref.substr(owner.ref.find('/') + 1);
    ordered_json patch;
    patch["metadata"]["ownerReferences"] = ordered_json::array({{{"apiVersion", owner.owner_api},
                                                                 {"kind", owner.owner_kind},
                                                                 {"name", owner_name},
                                                                 {"uid", uid}}});
    const std::string body = patch.dump();
    const size_t n = a.objects.size();
    for (size_t i = 0; i < n; ++i) {
      if (!a.objects[i].owned) continue;
      PreparedObject o;
      o.step = 4;
      o.ref = a.objects[i].ref;
      o.path = a.objects[i].path;
      o.owner_patch = true;
      o.spec.method = "PATCH";
      o.spec.path = o.path;
      o.spec.query = {{"fieldManager", "ktrain"}};
      o.spec.content_type = "application/merge-patch+json";
      o.spec.body = body;
      o.spec.idempotent = true;
      o.spec.accept = kube::kAcceptMetadataOnly;
      a.objects.push_back(std::move(o));
      a.order.push_back(fed++);
    }
  };

  // The run's Secret is created owned by its Service (whose uid the Service's answer
  // gives), which the Job then owns: nobody needs to patch, read or list Secrets, so
  // that the Role of `ktrain setup` grants only create and delete on them.
  auto own_secret = [&](Active& a, size_t service_index, const net::Response& resp) {
    std::string uid;
    try {
      uid = ordered_json::parse(resp.body).at("metadata").at("uid").get<std::string>();
    } catch (const std::exception&) {
      return;
    }
    const PreparedObject& owner = a.objects[service_index];
    const std::string owner_name = owner.ref.substr(owner.ref.find('/') + 1);
    for (auto& o : a.objects) {
      if (!o.secret || o.spec.body.empty()) continue;
      ordered_json secret = ordered_json::parse(o.spec.body);
      secret["metadata"]["ownerReferences"] =
          ordered_json::array({{{"apiVersion", owner.secret_owner_api},
                                {"kind", owner.secret_owner_kind},
                                {"name", owner_name},
                                {"uid", uid}}});
      o.spec.body = secret.dump();
    }
  };

  struct Done {
    int step;
    std::uint64_t order;
    std::string ref;
  };
  std::vector<Done> done;
  // The objects this call created (201), removed again when a later one is refused
  // or the feed fails, so that a refused submit leaves nothing behind.
  std::vector<std::string> created;
  auto roll_back = [&]() -> std::string {
    if (created.empty()) return "";
    std::vector<net::Request> dels;
    for (const auto& path : created) dels.push_back(client_.delete_request(path));
    auto resps = client_.send_all(dels);
    size_t removed = 0;
    for (const auto& r : resps) {
      if (r.failure == net::TransportFailure::kNone && (r.ok() || r.status == 404)) ++removed;
    }
    if (created.size() == 1) {
      return removed == 1 ? "\n(the object this submit had created was removed)"
                          : "\n(the object this submit created could not be removed; 'ktrain "
                            "delete RUN' removes it)";
    }
    if (removed == created.size()) {
      return "\n(the " + std::to_string(removed) + " objects this submit had created were removed)";
    }
    return "\n(" + std::to_string(created.size() - removed) + " of the " +
           std::to_string(created.size()) +
           " objects this submit created could not be removed; 'ktrain delete RUN' removes them)";
  };
  // The feed failed (the render): what was sent is removed, and its error rethrown.
  auto check_feed = [&] {
    std::exception_ptr error = feed.error();
    if (!error) return;
    const std::string undone = roll_back();
    if (undone.empty()) std::rethrow_exception(error);
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      throw Error(e.what() + undone, e.exit_status());
    } catch (const std::exception& e) {
      throw Error(e.what() + undone);
    }
  };

  for (;;) {
    size_t ready = 0;  // requests the next batch could hold
    for (const auto& a : active) {
      for (size_t i = a.next; i < a.objects.size() && a.objects[i].step == a.objects[a.next].step;
           ++i) {
        ++ready;
      }
    }
    if (more && ready < kBatch) {
      std::deque<PreparedFeed::Group> fresh;
      more = feed.take(fresh, kBatch - ready);
      check_feed();
      for (auto& g : fresh) {
        if (g.empty()) continue;
        Active a;
        a.objects = std::move(g);
        std::stable_sort(
            a.objects.begin(), a.objects.end(),
            [](const PreparedObject& x, const PreparedObject& y) { return x.step < y.step; });
        for (size_t i = 0; i < a.objects.size(); ++i) a.order.push_back(fed++);
        active.push_back(std::move(a));
      }
      if (!fresh.empty() || more) continue;
    }
    if (ready == 0) break;
    check_feed();  // a failed render sends nothing more

    // One batch: of each group in turn, the objects of its next step.
    std::vector<net::Request> reqs;
    std::vector<std::pair<Active*, size_t>> slots;
    for (auto& a : active) {
      a.end = a.next;
      if (reqs.size() >= kBatch) continue;
      const int step = a.objects[a.next].step;
      while (a.end < a.objects.size() && a.objects[a.end].step == step && reqs.size() < kBatch) {
        reqs.push_back(client_.to_request(std::move(a.objects[a.end].spec)));
        std::string().swap(a.objects[a.end].spec.body);
        slots.emplace_back(&a, a.end);
        ++a.end;
      }
    }
    // Of each request its method and URL stay, for messages; of each answer, the status
    // and, for errors only, the body.
    std::vector<net::Request> sent(reqs.size());
    for (size_t k = 0; k < reqs.size(); ++k) {
      sent[k].method = reqs[k].method;
      sent[k].url = reqs[k].url;
    }
    auto resps = client_.send_all(std::move(reqs));

    std::vector<std::string> problems;
    std::optional<Error> first;
    for (size_t k = 0; k < resps.size(); ++k) {
      const net::Response& resp = resps[k];
      auto& [group, index] = slots[k];
      const PreparedObject& obj = group->objects[index];
      if (!(sent[k].method == "POST" && resp.failure == net::TransportFailure::kNone &&
            resp.status == 409)) {
        try {
          client_.check(sent[k], resp);
          if (!dry_run && resp.status == 201) created.push_back(obj.path);
        } catch (const Error& e) {
          Error wrapped = e.wrapped("applying " + obj.ref);
          if (!first) first = wrapped;
          problems.push_back(wrapped.what());
          continue;
        }
      }
      if (!obj.owner_patch) done.push_back({obj.step, group->order[index], obj.ref});
      if (obj.owns_secret && !dry_run) own_secret(*group, index, resp);
      // (This adds to the group's objects: `obj` is not to be used after it.)
      if (!obj.owner_kind.empty() && !dry_run) add_owner_patches(*group, index, resp);
    }
    if (on_sent && !first) on_sent(done.size());
    if (first) {
      feed.stop();
      const std::string undone = roll_back();
      if (problems.size() == 1) throw Error(first->what() + undone, first->exit_status());
      std::string msg = std::to_string(problems.size()) + " objects were refused:";
      for (const auto& p : problems) msg += "\n  " + p;
      throw Error(msg + undone, first->exit_status());
    }
    for (auto& a : active) a.next = a.end;
    active.erase(std::remove_if(active.begin(), active.end(),
                                [](const Active& a) { return a.next == a.objects.size(); }),
                 active.end());
  }
  check_feed();

  std::sort(done.begin(), done.end(), [](const Done& x, const Done& y) {
    return x.step != y.step ? x.step < y.step : x.order < y.order;
  });
  std::vector<std::string> refs;
  refs.reserve(done.size());
  for (auto& d : done) refs.push_back(std::move(d.ref));
  return refs;
}

namespace {

/// What a summary does not need, dropped while each page or event is parsed.
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

}  // namespace

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

SubmitResult KubeBackend::submit(const project::Project& project, const SubmitOptions& opts) {
  if (!project.train) {
    throw UsageError(project.file +
                     ": there is no train section to submit (use 'ktrain serve' "
                     "for the serve section)");
  }
  const std::string ns = namespace_for(project);
  const auto& target = render::targets::train_target(project.train->target);
  require_api(target.api, "train.target", target.name);
  render::RenderOptions ro;
  ro.run_id = opts.run_id.empty() ? random_run_id() : opts.run_id;
  const auto names = render::run_names(project, ro.run_id);
  const std::set<std::string> runs(names.begin(), names.end());
  if (project.train->sweep_parallel > 0 && !opts.run_id.empty()) {
    // Submitted again: the runs of the sweep started already stay started (an apply
    // with suspend would stop them).
    kube::ListOptions lo;
    lo.label_selector = std::string(kube::kLabelSweep) + "=" + project.name + "-" + ro.run_id;
    lo.drop_keys = kSummaryDropKeys;
    client_.list(kube::collection_path(kube::resource_type("batch/v1", "Job"), ns), lo,
                 [&ro](json& job) {
                   const auto& l = job["metadata"]["labels"];
                   if (l.value(render::kLabelQueued, "") != "true") {
                     ro.started.insert(job["metadata"].value("name", ""));
                   }
                 });
  }
  // The renderer makes each object into its request as it is rendered (and frees its
  // tree), and hands over each run's objects together; they are sent while the later
  // runs are rendered.
  PreparedFeed feed;
  std::vector<std::string> warnings;
  std::thread renderer([&] {
    std::exception_ptr error;
    try {
      PreparedFeed::Group group;
      std::string group_run;
      warnings = render::render_each(project, ro, [&](ordered_json&& obj) {
        const std::string run = label_of(obj, kRunLabel);
        if (!runs.count(run)) return;  // the serve objects
        if (run != group_run && !group.empty()) {
          if (!feed.push(std::move(group))) throw FeedStopped();
          group.clear();
        }
        group_run = run;
        if (obj["metadata"].is_object() && !obj["metadata"].contains("namespace")) {
          obj["metadata"]["namespace"] = ns;
        }
        if (obj.value("kind", "") == target.api.kind && target.rendezvous) {
          ordered_json labels = obj["metadata"]["labels"];
          labels.erase(render::kLabelQueued);  // the Job's state, not the Secret's
          auto secret =
              prepare(rendezvous_secret(run, ns, labels, random_token()), opts.dry_run_server);
          if (target.api.crd[0] != '\0') secret.step = 4;  // after its owner, the operator's object
          group.push_back(std::move(secret));
        }
        group.push_back(prepare(obj, opts.dry_run_server));
      });
      if (!group.empty()) feed.push(std::move(group));
    } catch (const FeedStopped&) {
    } catch (...) {
      error = std::current_exception();
    }
    feed.close(error);
  });
  struct Join {
    std::thread& thread;
    PreparedFeed& feed;
    void operator()() {
      feed.stop();
      if (thread.joinable()) thread.join();
    }
    ~Join() { (*this)(); }
  } join{renderer, feed};

  SubmitResult result;
  result.runs = names;
  try {
    // A Secret, a Service and a Job per run, and a PodGroup with Volcano; a Secret and
    // the operator's object for other targets (no Secret for an MPIJob).
    const bool own_pod_group = project.scheduling.gang == "volcano" &&
                               (target.api.crd[0] == '\0' || std::string(target.name) == "jobset");
    // A TrainJob of an image without the launcher brings its own TrainingRuntime.
    const bool own_runtime =
        std::string(target.name) == "trainjob" &&
        render::launcher_plan(project, render::image_to_run(project, ro)).inject;
    const std::size_t per_run = (target.api.crd[0] == '\0' ? 3 : 1 + (target.rendezvous ? 1 : 0)) +
                                (own_pod_group ? 1 : 0) + (own_runtime ? 1 : 0);
    std::function<void(std::size_t)> on_sent;
    if (opts.progress) {
      on_sent = [&](std::size_t n) { opts.progress(n, names.size() * per_run); };
    }
    result.objects = apply_feed(feed, opts.dry_run_server, on_sent);
  } catch (const Error& e) {
    join();
    for (const auto& w : warnings) env_.warn(w);
    if (feed.error()) throw;  // the render's own error
    throw e.wrapped(opts.dry_run_server ? "submitting (server dry run)" : "submitting");
  }
  join();
  for (const auto& w : warnings) env_.warn(w);
  return result;
}

namespace {

/// Runs `f` (a watch's thread); an error it throws is kept in `error` unless one is
/// there already, and `cv` is woken to say so.
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

/// The rank that failed first among a run's pods, and its exit code (-1 when unknown):
/// the earliest finish among failed ranks, a peer's "stopped because another rank
/// failed" (exit 75) only when nothing else failed.
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

}  // namespace

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

  if (auto first = first_failure(pods)) st.first_failed = first->first;
  return st;
}

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

void KubeBackend::remove(const std::string& run) {
  const std::string ns = client_.default_namespace();
  kube::ListOptions lo;
  lo.label_selector = std::string(kRunLabel) + "=" + run;
  lo.drop_keys = {"managedFields", "spec", "status", "data", "annotations"};
  // The kinds are listed at once (one thread each: every list waits on the server).
  const size_t kinds = std::size(kOwnedKinds);
  std::vector<std::vector<net::Request>> found(kinds);
  std::vector<std::exception_ptr> errors(kinds);
  std::vector<std::thread> listers;
  for (size_t i = 0; i < kinds; ++i) {
    listers.emplace_back([&, i] {
      const auto& k = kOwnedKinds[i];
      const auto type = kube::resource_type(k.api_version, k.kind);
      try {
        client_.list(kube::collection_path(type, ns), lo, [&](json& obj) {
          found[i].push_back(client_.delete_request(
              kube::object_path(type, ns, obj["metadata"].value("name", ""))));
        });
      } catch (const kube::ApiError& e) {
        if (k.optional && e.http_status() == 404) return;  // the CRD is not installed
        // An operator's kind that the user may not list: none of theirs to delete (a
        // Role made before the targets, or for plain Jobs only, still deletes runs).
        if (k.optional && e.http_status() == 403 && i >= kFirstOperatorKind) return;
        errors[i] = std::make_exception_ptr(e.wrapped("deleting run \"" + run + "\""));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : listers) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<net::Request> deletes;
  for (auto& f : found) {
    for (auto& r : f) deletes.push_back(std::move(r));
  }
  if (deletes.empty()) throw run_not_found(run, ns);
  // The rendezvous Secret goes by its name: Secrets are never listed (nor read), so
  // that a user needs no right to read other runs' Secrets. (One left without its
  // run goes with its owner, the run's Service, by garbage collection.)
  static_assert(std::string_view(kOwnedKinds[0].kind) == "Job");
  if (!found[0].empty()) {
    deletes.push_back(client_.delete_request(
        kube::object_path(kube::resource_type("v1", "Secret"), ns, run + "-rdzv")));
  }
  auto resps = client_.send_all(deletes);
  for (size_t i = 0; i < resps.size(); ++i) {
    if (resps[i].failure == net::TransportFailure::kNone && resps[i].status == 404) continue;
    with_context("deleting run \"" + run + "\"", [&] { client_.check(deletes[i], resps[i]); });
  }
}

namespace {

/// The state of a run's Job or operator's object.
RunState state_of(const KubeBackend::RunObject& run) {
  return run.type.kind == "Job" ? kube::summarize_job(run.object).state
                                : kube::summarize_operator(run.object).state;
}

/// Where a run's object says that it is suspended: a Job's, JobSet's and TrainJob's
/// spec.suspend, the Kubeflow operators' spec.runPolicy.suspend.
json suspend_patch(const std::string& kind, bool suspend) {
  if (kind == "PyTorchJob" || kind == "TFJob" || kind == "MPIJob") {
    return {{"runPolicy", {{"suspend", suspend}}}};
  }
  return {{"suspend", suspend}};
}

}  // namespace

KubeBackend::RunObject KubeBackend::run_to_change(const std::string& ns, const std::string& run,
                                                  const std::string& verb) {
  auto found = find_run(ns, run);
  if (!found) throw run_not_found(run, ns);
  if (is_service_kind(found->type.kind)) {
    throw Error("\"" + run + "\" is a service: 'ktrain scale " + run +
                " --replicas 0' takes its replicas away, 'ktrain serve' brings them back");
  }
  const auto state = state_of(*found);
  if (state == RunState::kSucceeded || state == RunState::kFailed) {
    throw Error("run \"" + run + "\" has ended (" + to_string(state) + "): nothing to " + verb +
                (verb == "resume" ? "; 'ktrain submit' starts a new run" : ""));
  }
  return std::move(*found);
}

static bool is_queued(const json& job) {
  const auto& labels = job["metadata"]["labels"];
  return labels.is_object() && labels.value(render::kLabelQueued, "") == "true";
}

bool KubeBackend::stop(const std::string& run) {
  const std::string ns = client_.default_namespace();
  const RunObject found = run_to_change(ns, run, "stop");
  if (state_of(found) == RunState::kStopped) return false;
  // A run waiting for its place in a sweep is stopped too: it no longer waits.
  // Suspending the Job makes the Job controller delete its pods (each gets its grace
  // period: the launcher passes SIGTERM on to the workers); the Job, its status, the
  // Service and the Secret stay. The label marks it as stopped rather than queued. The
  // operators (Kubeflow, JobSet, Trainer) do the same with their suspended objects.
  json patch = {
      {"metadata",
       {{"labels", {{kube::kLabelStopped, "true"}}},
        {"annotations", {{kube::kAnnotationStoppedAt, format_rfc3339(env_.clock->now())}}}}},
      {"spec", suspend_patch(found.type.kind, true)}};
  with_context("stopping run \"" + run + "\"",
               [&] { client_.merge_patch(kube::object_path(found.type, ns, run), patch); });
  return true;
}

bool KubeBackend::resume(const std::string& run) {
  const std::string ns = client_.default_namespace();
  const RunObject found = run_to_change(ns, run, "resume");
  const json& job = found.object;
  // Stopped by `ktrain stop`, or waiting for its place in a sweep.
  if (state_of(found) != RunState::kStopped && !is_queued(job)) return false;
  json patch = {{"metadata",
                 {{"labels", {{kube::kLabelStopped, nullptr}, {render::kLabelQueued, nullptr}}},
                  {"annotations", {{kube::kAnnotationStoppedAt, nullptr}}}}},
                {"spec", suspend_patch(found.type.kind, false)}};
  // A waiting run of a Kueue queue: it gets its queue label and stays suspended; Kueue
  // lets it in (unsuspends it) when the queue has room.
  const auto& annotations = job["metadata"]["annotations"];
  const std::string queue =
      annotations.is_object() ? annotations.value(render::kAnnotationQueue, "") : "";
  if (!queue.empty()) {
    patch["metadata"]["labels"][render::kLabelKueueQueue] = queue;
    patch["metadata"]["annotations"][render::kAnnotationQueue] = nullptr;
    patch.erase("spec");
  }
  with_context("resuming run \"" + run + "\"",
               [&] { client_.merge_patch(kube::object_path(found.type, ns, run), patch); });
  return true;
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
