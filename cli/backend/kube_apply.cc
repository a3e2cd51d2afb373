// KubeBackend's apply: objects made into requests (PreparedObject), handed over in
// groups (PreparedFeed) and sent step by step, many groups at once, with owner
// references and a roll-back of what a refused submit created; the rendezvous Secret.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "backend/kube_backend.h"
#include "backend/kube_shared.h"
#include "base/error.h"
#include "base/random.h"
#include "render/render.h"

namespace ktrain::backend {

using nlohmann::ordered_json;
using namespace detail;

namespace {

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

}  // namespace ktrain::backend
