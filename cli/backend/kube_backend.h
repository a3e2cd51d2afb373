#pragma once
// The cluster backend: runs are Indexed Jobs (with a headless Service, a rendezvous
// Secret and, for Volcano, a PodGroup) found again by their ktrain.dev/run label.
// Its code, by verb: kube_submit.cc (submit) on kube_apply.cc (apply, the Secret);
// kube_list.cc (list), kube_status.cc (status, a sweep's status), kube_logs.cc and
// kube_follow.cc (logs, logs -f), kube_lifecycle.cc (delete, stop, resume),
// kube_serve.cc (serve, scale, version); kube_backend.cc what they share (the
// namespace, discovery of operators' APIs, finding a run by name).

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/env.h"
#include "kube/client.h"
#include "kube/connection.h"
#include "render/kube_version.h"
#include "render/targets/targets.h"

namespace ktrain::backend {

/// The label that every object of a run carries.
inline constexpr const char* kRunLabel = "ktrain.dev/run";

class PreparedFeed;

/// Speaks REST to the API server through a kube::Client.
class KubeBackend : public Backend {
 public:
  /// Uses `client` and `env` (both must outlive this).
  KubeBackend(kube::Client& client, Env& env);
  /// Owns `connection` and uses its client.
  KubeBackend(std::unique_ptr<kube::Connection> connection, Env& env);

  /// Renders the project's training runs and applies them: for each run a Secret
  /// `<run>-rdzv` with a random `token` (created once, kept on a second submit), then
  /// its Service and PodGroup, then its Job (server-side apply, field manager ktrain).
  /// Runs are sent while later ones are still being rendered, many at once; each run's
  /// objects go in that order. A refused object stops the submit and removes what it
  /// had created. Submitting the same run again changes nothing. With dry_run_server,
  /// the server validates without persisting.
  SubmitResult submit(const project::Project& project, const SubmitOptions& opts) override;

  /// The ktrain Jobs in the namespace (or all namespaces), newest first; read page by
  /// page, keeping only the summaries.
  std::vector<RunSummary> list(const ListFilter& filter) override;
  std::vector<SweepRun> sweep_runs(const std::string& sweep) override;
  bool stop(const std::string& run) override;
  bool resume(const std::string& run) override;
  void watch_list(const ListFilter& filter,
                  const std::function<bool(const std::vector<RunSummary>&)>& on_change,
                  const std::function<bool()>& cancelled) override;

  /// The Job's conditions, one row per rank, and explanations from pod conditions,
  /// container states and events. Throws Error (exit 1) when there is no such run.
  RunStatus status(const std::string& run) override;
  void read_checkpoint(RunStatus& st) override;

  /// Watches the run's Job and pods (list, then watch; bookmarks; a relist on 410
  /// Gone) and calls `on_change` whenever the status changes, until the run ends.
  void watch_status(const std::string& run, const StatusCallback& on_change,
                    const std::function<bool()>& cancelled) override;

  /// Each rank's current pod log (concurrently fetched, printed rank by rank); with
  /// follow (and not previous), follow_kube_logs: every rank's stream, found by watching
  /// the run's pods, exactly once across dropped streams, until the run ends.
  void logs(const std::string& run, const LogOptions& opts, const LogSink& sink) override;

  /// Deletes the run's Jobs, Services, PodGroups, Secrets, Deployments and HPAs by label
  /// (background propagation: the Job's pods go too). Throws Error when nothing has
  /// the run's label.
  void remove(const std::string& run) override;

  /// Applies the project's serving objects of its serve.target (checking first that the
  /// cluster serves its API) and, with opts.wait, polls the workload until it is ready
  /// as the target defines it (kube/rollout.h). An autoscaled Deployment keeps the
  /// replicas its HPA gave it; a disruption budget left from more replicas goes.
  ServeResult serve(const project::Project& project, const ServeOptions& opts) override;
  /// The Deployment's or LeaderWorkerSet's scale subresource and the HPA that targets
  /// it, or an InferenceService's own minReplicas/maxReplicas; the kinds are looked for
  /// at once, those whose CRD is missing passed over.
  ScaleResult scale(const ScaleRequest& req) override;
  /// The API server's /version and (credentials taken out) URL.
  nlohmann::ordered_json server_version() override;

  /// Applies `objects` in dependency order (Secrets; Services, PodGroups, ConfigMaps;
  /// then the rest), concurrently within a step; returns their "kind.group/name" refs.
  /// Secrets are created (POST) and left alone when they exist.
  std::vector<std::string> apply_objects(const std::vector<nlohmann::ordered_json>& objects,
                                         bool dry_run);

  /// One object made into the request it is sent as (its body compact JSON), so that
  /// its tree can be freed at once: a sweep of thousands of runs then holds a few KiB
  /// per object, not a tree several times that size.
  struct PreparedObject {
    int step =
        0;  ///< 0 Namespaces, 1 Services and the like, 2 Secrets, 3 the rest, 4 owner patches
    std::string ref;   ///< kind/name, for messages
    std::string path;  ///< the object's URL path (to remove it again)
    kube::RequestSpec spec;
    /// A run's Service, whose uid becomes the owner of the run's Secret (created after
    /// it, with that ownerReference), and that Secret.
    bool owns_secret = false;
    bool secret = false;
    /// A run's Service or PodGroup, or a service's Service, autoscaler or
    /// disruption budget: once its group's owner (the Job, the Deployment) exists, a
    /// patch makes it their owner, so that the owner's deletion (ktrain delete, or the
    /// TTL controller's) takes it too.
    bool owned = false;
    /// The apiVersion and kind of the object that owns the Secret (owns_secret): the
    /// Service of a Job's run, the operator's object (PyTorchJob, JobSet, ...) else.
    std::string secret_owner_api, secret_owner_kind;
    std::string owner_kind;    ///< the group's owner (Job, Deployment, PyTorchJob, ...), else ""
    std::string owner_api;     ///< its apiVersion
    bool owner_patch = false;  ///< such a patch (not reported as an object of its own)
  };
  PreparedObject prepare(const nlohmann::ordered_json& obj, bool dry_run) const;
  /// apply_objects of prepared objects (their request bodies are moved out).
  std::vector<std::string> apply_prepared(std::vector<PreparedObject>& objects, bool dry_run);
  /// Applies the groups of objects that `feed` hands over until it ends: each group's
  /// objects step by step, many groups at once (see submit). Returns the refs ordered
  /// by step, then as fed. On a refused object, or when the feed fails, it stops the
  /// feed, removes what it created and throws. `on_sent` hears, after each batch, how
  /// many objects have been applied so far.
  std::vector<std::string> apply_feed(PreparedFeed& feed, bool dry_run,
                                      const std::function<void(std::size_t)>& on_sent = nullptr);

  /// Throws UsageError (exit 2) when the cluster does not serve the API of `api` (a
  /// CRD that is not installed), naming `field` (train.target / serve.target), the
  /// CRD and how to install it; nothing for the built-in kinds.
  void require_api(const render::targets::Api& api, const std::string& field,
                   const std::string& target);

  /// The operators' kinds (train.target, serve.target) whose API group and version the
  /// cluster serves, by one discovery request.
  struct OperatorKind {
    std::string api_version, kind;
    bool serve = false;
  };
  std::vector<OperatorKind> served_operator_kinds();

  /// The object that a run or service named `run` is: its Job, its operator's object
  /// (PyTorchJob, JobSet, InferenceService, ...) or its Deployment (one ktrain made),
  /// with its resource type; nullopt when there is none. One round trip: the kinds are
  /// asked for at once, and those the cluster lacks (404) or the user may not read
  /// (403) are passed over.
  struct RunObject {
    kube::ResourceType type;
    nlohmann::json object;  ///< with its kind set
  };
  std::optional<RunObject> find_run(const std::string& ns, const std::string& run);

  /// A kind to look for by name: `optional` ones (an operator's, whose CRD may be
  /// missing or not granted) pass over a 403 as every kind passes over a 404;
  /// `managed` ones count only with app.kubernetes.io/managed-by=ktrain.
  struct Lookup {
    kube::ResourceType type;
    bool optional = false;
    bool managed = false;
  };
  /// The first of `kinds`, in their order, that has an object `name` in `ns`; all are
  /// asked for at once (one round trip).
  std::optional<RunObject> find_first(const std::vector<Lookup>& kinds, const std::string& ns,
                                      const std::string& name);

  /// The API server's Kubernetes release (its /version, asked once), which submit and
  /// dev render for; the newest tested when the answer names none.
  render::KubeVersion kube_version();

  /// The namespace requests go to: -n, else the project's, else the context's.
  std::string namespace_for(const project::Project& project) const;

  /// The client.
  kube::Client& client() { return client_; }

 private:
  /// The run that `verb` (stop, resume) changes: its Job or operator's object. Throws
  /// Error when there is none, when it is a service, or when it has ended.
  RunObject run_to_change(const std::string& ns, const std::string& run, const std::string& verb);

  /// The status from the Job and its pods, with the events about them (listed here).
  RunStatus describe(const std::string& ns, const std::string& run, const nlohmann::json& job,
                     const std::vector<nlohmann::json>& pods);

  std::optional<render::KubeVersion> kube_version_;
  std::unique_ptr<kube::Connection> connection_;
  kube::Client& client_;
  Env& env_;
};

/// Groups of prepared objects (a group: one run's objects) handed from a producer (the
/// renderer, on a thread of its own) to KubeBackend::apply_feed. It holds at most about
/// kMaxQueued objects, the producer waiting while it is full, so that a sweep of
/// thousands of runs is never held whole.
class PreparedFeed {
 public:
  using Group = std::vector<KubeBackend::PreparedObject>;
  static constexpr size_t kMaxQueued = 1024;

  /// Producer: hands over `group`, waiting while the feed is full. False when the
  /// consumer has stopped: the producer should end.
  bool push(Group group);
  /// Producer: there will be no more groups; `error` when producing them failed.
  void close(std::exception_ptr error = nullptr);
  /// Consumer: waits until at least `at_least` objects are queued or the feed is
  /// closed, then moves the queued groups to `out`. False once the feed is closed and
  /// empty.
  bool take(std::deque<Group>& out, size_t at_least);
  /// Consumer: wants no more; push returns false from now on.
  void stop();
  /// The producer's failure, if it has failed.
  std::exception_ptr error();

 private:
  std::mutex mu_;
  std::condition_variable ready_;  ///< groups queued, or closed
  std::condition_variable space_;  ///< room in the queue, or stopped
  std::deque<Group> groups_;
  size_t queued_ = 0;  ///< objects in groups_
  bool closed_ = false;
  bool stopped_ = false;
  std::exception_ptr error_;
};

/// The rendezvous Secret of `run`: `<run>-rdzv` with data.token = base64(`token`) and the
/// run's labels.
nlohmann::ordered_json rendezvous_secret(const std::string& run, const std::string& ns,
                                         const nlohmann::ordered_json& labels,
                                         const std::string& token);

/// `objects` (a render) with each training run's rendezvous Secret, with a fresh token,
/// before the run's first object: what `ktrain dev` creates. Never printed: render's
/// output holds no secret (a Job's pods do without the Secret).
std::vector<nlohmann::ordered_json> with_rendezvous_secrets(
    std::vector<nlohmann::ordered_json> objects);

/// The error for a run whose Job is not there (exit 1).
Error run_not_found(const std::string& run, const std::string& ns);

/// 32 random bytes from the kernel as 64 hex digits.
std::string random_token();

}  // namespace ktrain::backend
