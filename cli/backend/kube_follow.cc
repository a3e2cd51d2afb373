// follow_kube_logs: a run's pods watched, and one log stream per rank followed to its
// end and resumed after every drop, with no thread per stream.
#include "backend/kube_follow.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/kube_backend.h"
#include "backend/log_line.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/json_read.h"
#include "kube/pod_view.h"
#include "kube/run_state.h"
#include "kube/watch.h"
#include "net/retry.h"

namespace ktrain::backend {

using nlohmann::json;

namespace {

using kube::ContainerState;
using kube::PodView;

std::chrono::system_clock::time_point from_ns(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

/// Follows one run; see follow_kube_logs.
class Follower {
 public:
  Follower(kube::Client& client, const Env& env, const std::string& ns, const std::string& run,
           const kube::ResourceType& workload, const LogOptions& opts, const LogSink& sink)
      : client_(client),
        env_(env),
        ns_(ns),
        run_(run),
        workload_(workload),
        opts_(opts),
        sink_(sink),
        rank_prefix_(opts.rank ? "[rank " + std::to_string(*opts.rank) + "]" : std::string()) {}

  void run() {
    const auto pod_type = kube::resource_type("v1", "Pod");
    auto stopped = [this] { return stop_.load(); };

    kube::WatchOptions pod_watch;
    pod_watch.label_selector = std::string(kube::kLabelRun) + "=" + run_;
    pod_watch.drop_keys = {"managedFields", "spec", "conditions"};
    pod_watch.cancelled = stopped;
    kube::WatchHandlers pod_handlers;
    pod_handlers.on_list = [this](std::vector<json>& items) { on_pod_list(items); };
    pod_handlers.on_event = [this](const std::string& type, json& pod) {
      std::lock_guard<std::mutex> lk(mu_);
      update_pod(pod, type == "DELETED");
      cv_.notify_all();
    };
    const std::string pods_path = kube::collection_path(pod_type, ns_);
    watchers_.emplace_back([=, this] {
      guard([&] { kube::list_watch(client_, env_, pods_path, pod_watch, pod_handlers); });
    });

    kube::WatchOptions job_watch;
    job_watch.field_selector = "metadata.name=" + run_;
    job_watch.drop_keys = {"managedFields", "template"};
    job_watch.cancelled = stopped;
    kube::WatchHandlers job_handlers;
    job_handlers.on_list = [this](std::vector<json>& items) {
      std::lock_guard<std::mutex> lk(mu_);
      job_listed_ = true;
      job_exists_ = !items.empty();
      if (job_exists_) update_job(items.front());
      cv_.notify_all();
    };
    job_handlers.on_event = [this](const std::string& type, json& job) {
      std::lock_guard<std::mutex> lk(mu_);
      if (type == "DELETED") {
        if (job_exists_) {
          job_exists_ = false;
          queue_notice(-1, "run " + run_ + " was deleted");
        }
      } else {
        job_exists_ = true;
        update_job(job);
      }
      cv_.notify_all();
    };
    const std::string jobs_path = kube::collection_path(workload_, ns_);
    watchers_.emplace_back([=, this] {
      guard([&] { kube::list_watch(client_, env_, jobs_path, job_watch, job_handlers); });
    });

    bool not_found = false;
    {
      std::unique_lock<std::mutex> lk(mu_);
      while (!stop_) {
        if (opts_.cancelled && opts_.cancelled()) break;
        flush_notices(lk);
        if (stop_) break;
        start_streams();
        advance_streams(lk);
        if (stop_) break;
        if (pods_listed_ && job_listed_ && !job_seen_ && pods_.empty()) {
          not_found = true;
          break;
        }
        if (ended()) {
          if (final_list_done_) break;
          // Before ending, one list of the pods, in case the watch is behind. Small
          // pages, each pod taken in as it is read: this comes when every stream has
          // ended, and hundreds of whole pods at once would be the peak of the follow.
          final_list_done_ = true;
          lk.unlock();
          kube::ListOptions lo;
          lo.label_selector = std::string(kube::kLabelRun) + "=" + run_;
          lo.drop_keys = {"managedFields", "spec", "conditions"};
          lo.limit = 32;
          guard([&] {
            client_.list(pods_path, lo, [this](json& p) {
              std::lock_guard<std::mutex> g(mu_);
              update_pod(p, false);
            });
          });
          lk.lock();
          continue;
        }
        cv_.wait_for(lk, std::chrono::milliseconds(100));
      }
      flush_notices(lk);
      stop_ = true;
      // The transport ends the requests in flight (they see stop_) and calls back.
      cv_.wait(lk, [this] {
        return std::none_of(streams_.begin(), streams_.end(),
                            [](const Stream& st) { return st.phase == Phase::kStreaming; });
      });
    }
    cv_.notify_all();
    for (auto& t : watchers_) t.join();
    if (error_) throw *error_;
    if (not_found) throw run_not_found(run_, ns_);
  }

 private:
  /// Runs `f`; an exception ends the whole follow and is rethrown by run().
  template <typename F>
  void guard(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      fail(e);
    } catch (const std::exception& e) {
      fail(Error(e.what()));
    }
  }

  void fail(const Error& e) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_ && !stop_) error_ = e;
      stop_ = true;
    }
    cv_.notify_all();
  }

  void on_pod_list(std::vector<json>& items) {
    std::lock_guard<std::mutex> lk(mu_);
    std::set<std::string> present;
    for (auto& p : items) {
      present.insert(p["metadata"].value("uid", ""));
      update_pod(p, false);
    }
    for (auto& [uid, pv] : pods_) {
      if (!present.count(uid)) pv.deleted = true;
    }
    if (!pods_listed_) {
      // Attaching to a run in progress: each rank's newest pod, not its past attempts.
      pods_listed_ = true;
      std::map<int, std::string> newest;
      for (const auto& [uid, pv] : pods_) {
        auto it = newest.find(pv.index);
        if (it == newest.end() || later(pv, pods_[it->second])) newest[pv.index] = uid;
      }
      for (const auto& [uid, pv] : pods_) {
        if (newest[pv.index] != uid) tracks_[pv.index].done.insert(uid);
      }
    }
    cv_.notify_all();
  }

  static bool later(const PodView& a, const PodView& b) {
    return a.created != b.created ? a.created > b.created : a.seen > b.seen;
  }

  void update_pod(const json& pod, bool deleted) {
    auto md = pod.find("metadata");
    if (md == pod.end() || !md->is_object()) return;
    const std::string uid = md->value("uid", "");
    if (uid.empty()) return;
    PodView& pv = pods_[uid];
    if (pv.seen == 0) pv.seen = ++seen_;
    kube::read_pod_view(pv, pod, opts_.container);
    if (pv.index < 0) {
      pv.index = kube::pod_rank(pod);
      if (pv.index < 0) {
        // A Deployment's pod (a serve run): replicas are numbered as they appear.
        auto [it, fresh] = replica_of_.emplace(pv.name, static_cast<int>(replica_of_.size()));
        pv.index = it->second;
      }
    }
    if (deleted) pv.deleted = true;
    if (opts_.on_waiting) {
      const auto [reason, message] =
          deleted ? std::pair<std::string, std::string>() : kube::waiting_reason(pod, pv.container);
      opts_.on_waiting(pv.index, reason, message);
    }
  }

  void update_job(json& job) {
    job_seen_ = true;
    if (workload_.kind == "Deployment") return;  // a service: it runs until deleted
    job["kind"] = workload_.kind;                // (a list's items may leave it out)
    const auto state = workload_.kind == "Job" ? kube::summarize_job(job).state
                                               : kube::summarize_operator(job).state;
    job_done_ = state == RunState::kSucceeded || state == RunState::kFailed;
    if (workload_.kind != "Job") return;
    job_uid_ = kube::detail::str(job, {"metadata", "uid"});
    const bool indexed = kube::detail::str(job, {"spec", "completionMode"}) == "Indexed";
    indexes_ =
        indexed ? kube::detail::integer(kube::detail::at_path(job, {"spec", "completions"})) : 0;
  }

  /// The run has ended: its Job finished or went away (or every index of it succeeded,
  /// which its controller says up to a second later), and no stream is left.
  bool ended() const {
    if (!pods_listed_ || !job_listed_) return false;
    for (const auto& [idx, t] : tracks_) {
      if (t.streaming) return false;
    }
    if (has_startable()) return false;
    return job_done_ || (job_seen_ && !job_exists_) ||
           kube::every_index_succeeded(pods_, job_uid_, indexes_);
  }

  bool wanted(const PodView& pv) const { return !opts_.node || pv.index == *opts_.node; }

  bool has_startable() const {
    for (const auto& [uid, pv] : pods_) {
      if (!wanted(pv)) continue;
      auto it = tracks_.find(pv.index);
      if (it == tracks_.end() || !it->second.done.count(uid)) return true;
    }
    return false;
  }

  /// Starts a stream for each rank whose next pod is known and whose previous stream
  /// has ended (a rank's attempts are followed one after another). Under mu_.
  void start_streams() {
    if (!pods_listed_) return;
    std::vector<std::pair<std::string, const PodView*>> order;
    for (const auto& [uid, pv] : pods_) {
      if (wanted(pv)) order.emplace_back(uid, &pv);
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      if (a.second->index != b.second->index) return a.second->index < b.second->index;
      return later(*b.second, *a.second);
    });
    for (const auto& [uid, pv] : order) {
      Track& t = tracks_[pv->index];
      if (t.streaming || t.done.count(uid)) continue;
      t.done.insert(uid);
      if (pv->deleted) continue;  // gone before it was attached to: nothing to read
      t.streaming = true;
      int attempt = 0;
      for (const auto& [u2, p2] : pods_) {
        if (p2.index == pv->index && !later(p2, *pv)) ++attempt;
      }
      const bool announce = t.followed > 0 || attempt > 1;
      ++t.followed;
      Stream& st = streams_.emplace_back();
      st.index = pv->index;
      st.uid = uid;
      st.name = pv->name;
      st.container = pv->container;
      const auto pod_type = kube::resource_type("v1", "Pod");
      st.log_path = kube::object_path(pod_type, ns_, st.name, "log");
      st.pod_path = kube::object_path(pod_type, ns_, st.name);
      if (announce) {
        queue_notice(st.index, "node " + std::to_string(st.index) + " restarted, attempt " +
                                   std::to_string(attempt) + " (pod " + st.name + ")");
      }
    }
  }

  /// Prints the queued notices (under mu_, released while printing).
  void flush_notices(std::unique_lock<std::mutex>& lk) {
    while (!notices_.empty()) {
      LogLine n = std::move(notices_.front());
      notices_.erase(notices_.begin());
      lk.unlock();
      emit(n);
      lk.lock();
    }
  }

  /// A notice for run()'s loop to print (under mu_); `index` < 0: of no rank.
  void queue_notice(int index, std::string text) {
    LogLine& n = notices_.emplace_back();
    if (index >= 0) n.rank = index;
    n.notice = true;
    n.text = std::move(text);
  }

  bool emit(const LogLine& line) {
    std::lock_guard<std::mutex> lk(sink_mu_);
    if (stop_) return false;
    if (sink_(line)) return true;
    sink_stopped();
    return false;
  }

  /// The sink returned false: everything stops.
  void sink_stopped() {
    stop_ = true;
    cv_.notify_all();
  }

  /// One pod's log, followed to its end and resumed after every drop. A state machine
  /// that run()'s loop advances (advance_streams); its requests run on the transport's
  /// own thread (HttpTransport::start) and come back through a callback, so that no
  /// thread waits per stream: 256 followed ranks cost no 256 threads and their stacks.
  struct Stream {
    enum class Phase {
      kWaitStart,  ///< for the container to start (or the pod to end or go away)
      kStreaming,  ///< its request is in flight (the fields it reads belong to it)
      kEnded,      ///< the request has ended: run()'s loop looks at why
      kSettling,   ///< ended with the stream's end: waits (until `until`) for the watch
      kAskPod,     ///< the pod is read from the API server (after_400: after a 400)
      kRenew,      ///< a 401: credentials are renewed, then it starts again
      kSleeping,   ///< until `until`, then kWaitStart
      kDone,
    };
    int index = -1;
    std::string uid;
    std::string name;
    std::string container;
    std::string log_path;
    std::string pod_path;
    Phase phase = Phase::kWaitStart;
    std::chrono::steady_clock::time_point until{};
    LineDedup dedup;
    TimestampParser timestamps;
    LineFramer lines;  ///< of the current connection
    bool first = true;
    bool renewed = false;  ///< credentials renewed after a 401 since data last came
    bool after_400 = false;
    int failures = 0;
    int status = 0;
    bool stopped = false;  ///< the sink said stop
    std::string error_body;
    std::string url;  ///< of the last request, for messages
    net::Response resp;
  };
  using Phase = Stream::Phase;

  /// A line of `s`'s log to the sink (under sink_mu_); false when the follow stops.
  /// Straight from the chunk it came in, through one LogLine shared by every stream:
  /// with hundreds of streams, a buffer of lines per stream would cost more memory
  /// than the lines.
  bool handle_line(Stream& s, std::string_view raw) {
    const auto sp = raw.find(' ');
    std::optional<std::int64_t> ts;
    if (sp != std::string_view::npos && sp >= 20) ts = s.timestamps.parse(raw.substr(0, sp));
    if (ts && !s.dedup.accept(*ts)) return true;
    std::string_view text = ts ? raw.substr(sp + 1) : raw;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (!rank_prefix_.empty() && text.substr(0, rank_prefix_.size()) != rank_prefix_) {
      return true;
    }
    LogLine& line = scratch_;
    line.rank = s.index;
    line.timestamp.assign(ts ? raw.substr(0, sp) : std::string_view());
    line.text.assign(text);
    return sink_(line);
  }

  /// Moves every stream on as far as it can go now (under mu_, released while requests
  /// start, pods are read and credentials renewed).
  void advance_streams(std::unique_lock<std::mutex>& lk) {
    const auto now = env_.clock->steady_now();
    std::vector<Stream*> to_start, to_ask, to_renew;
    for (auto it = streams_.begin(); it != streams_.end();) {
      step(*it, now);
      switch (it->phase) {
        case Phase::kWaitStart:
          if (started(*it)) {
            it->phase = Phase::kStreaming;
            to_start.push_back(&*it);
          }
          break;
        case Phase::kAskPod:
          to_ask.push_back(&*it);
          break;
        case Phase::kRenew:
          to_renew.push_back(&*it);
          break;
        default:
          break;
      }
      if (it->phase == Phase::kDone) {
        tracks_[it->index].streaming = false;
        it = streams_.erase(it);
      } else {
        ++it;
      }
    }
    flush_notices(lk);  // a restart's notice before the new pod's lines
    if (to_start.empty() && to_ask.empty() && to_renew.empty()) return;
    lk.unlock();
    bool renewed = false;
    if (!to_renew.empty()) guard([&] { renewed = client_.renew_credentials(); });
    if (!to_ask.empty()) guard([&] { ask_pods(to_ask); });
    for (Stream* st : to_start) begin_request(*st);
    lk.lock();
    for (Stream* st : to_renew) {
      if (st->phase != Phase::kRenew) continue;
      if (renewed) {
        st->phase = Phase::kWaitStart;
      } else {
        fail_check(*st);  // the 401, as it came
        st->phase = Phase::kDone;
      }
    }
  }

  /// Whether the container of a waiting stream has started (or its pod ended or went
  /// away). While it waits, says once why the container cannot start (an image that
  /// cannot be pulled, a missing Secret, a failed init container), rather than waiting
  /// in silence. Under mu_.
  bool started(Stream& s) {
    PodView& pv = pods_[s.uid];
    if (!pv.blocked_key.empty() && pv.blocked_key != pv.blocked_told) {
      pv.blocked_told = pv.blocked_key;
      queue_notice(pv.index, "node " + std::to_string(pv.index) + " (pod " + pv.name +
                                 ") cannot start yet: " + pv.blocked);
    }
    return pv.deleted || pv.state == ContainerState::kRunning ||
           pv.state == ContainerState::kTerminated || pv.phase == "Succeeded" ||
           pv.phase == "Failed";
  }

  /// One step of `s` that needs no request (under mu_).
  void step(Stream& s, std::chrono::steady_clock::time_point now) {
    if (stop_ && s.phase != Phase::kStreaming) {
      s.phase = Phase::kDone;
      return;
    }
    switch (s.phase) {
      case Phase::kEnded:
        request_ended(s, now);
        if (s.phase == Phase::kSettling) step(s, now);  // the watch may know already
        break;
      case Phase::kSettling: {
        const PodView& pv = pods_[s.uid];
        if (!(pv.deleted || pv.state == ContainerState::kTerminated || now >= s.until)) break;
        if (pv.state == ContainerState::kTerminated) {
          last_line(s);
          s.phase = Phase::kDone;
        } else {
          s.after_400 = false;  // the watch did not say: ask the API server
          s.phase = Phase::kAskPod;
        }
        break;
      }
      case Phase::kSleeping:
        if (now >= s.until) s.phase = Phase::kWaitStart;
        break;
      default:
        break;
    }
  }

  /// The stream's request has ended: why, and what next (under mu_).
  void request_ended(Stream& s, std::chrono::steady_clock::time_point now) {
    if (s.stopped) {
      s.phase = Phase::kDone;
      return;
    }
    if (s.lines.progressed()) {
      s.failures = 0;
      s.renewed = false;
    }
    const net::Response& resp = s.resp;
    const bool answered = resp.failure == net::TransportFailure::kNone;
    if (answered && s.status >= 200 && s.status < 300) {
      // The stream ended: the container finished, the pod went away, or the connection
      // was closed politely in the middle (then resume). The pod watch usually tells
      // which by now; the API server is asked only when it has not (hundreds of streams
      // ending together would otherwise all ask at once).
      s.phase = Phase::kSettling;
      s.until = now + kSettleWait;
    } else if (answered && s.status == 404) {
      gone(s);
      s.phase = Phase::kDone;
    } else if (answered && s.status == 400) {
      // The container is not running yet (or never ran): wait for the pod to move.
      s.after_400 = true;
      s.phase = Phase::kAskPod;
    } else if (answered && s.status == 401 && !s.renewed) {
      s.renewed = true;
      s.phase = Phase::kRenew;
    } else if (answered && s.status != 429 && s.status < 500 && fail_check(s)) {
      s.phase = Phase::kDone;  // 401, 403, ...: the follow ends
    } else {
      retry_later(s, now);
    }
  }

  /// After an answer that is no end: at once when data came on it, else after a delay
  /// that grows with each failure, up to kMaxFailures answers (under mu_).
  void retry_later(Stream& s, std::chrono::steady_clock::time_point now) {
    if (s.lines.progressed()) {
      s.phase = Phase::kWaitStart;  // resume at once after a drop in the middle of data
      return;
    }
    // A server that does not answer at all is tried on: the pod watch ends the follow
    // after the grace period (KTRAIN_API_GRACE).
    if (++s.failures >= kMaxFailures && s.resp.failure == net::TransportFailure::kNone) {
      if (!fail_check(s)) {
        fail_locked(
            Error("following pod " + s.name + ": the log stream keeps ending without data"));
      }
      s.phase = Phase::kDone;
      return;
    }
    s.phase = Phase::kSleeping;
    s.until = now + kube::reconnect_delay(s.failures);
  }

  /// The follow ends with the error that `s`'s answer stands for, if it stands for one
  /// (under mu_); false when it does not.
  bool fail_check(Stream& s) {
    net::Response resp = s.resp;
    resp.status = s.status;
    resp.body = s.error_body;
    try {
      client_.check(request_of(s), resp);
    } catch (const Error& e) {
      fail_locked(e);
      return true;
    }
    return false;
  }

  /// What messages need of the stream's last request.
  static net::Request request_of(const Stream& s) {
    net::Request r;
    r.url = s.url;
    return r;
  }

  /// As fail(), under mu_.
  void fail_locked(const Error& e) {
    if (!error_ && !stop_) error_ = e;
    stop_ = true;
    cv_.notify_all();
  }

  /// The pod is gone: says so unless its container was seen to finish (under mu_).
  void gone(Stream& s) {
    if (pods_[s.uid].state != ContainerState::kTerminated) {
      queue_notice(s.index, "node " + std::to_string(s.index) + ": pod " + s.name +
                                " was deleted; its log ends here");
    }
  }

  /// The log has ended for good: a last line without "\n" goes out too.
  void last_line(Stream& s) {
    if (s.lines.rest().empty()) return;
    std::lock_guard<std::mutex> lk(sink_mu_);
    if (!stop_ && !handle_line(s, s.lines.rest())) sink_stopped();
  }

  /// Reads the pods of streams in kAskPod (mu_ not held), and moves them on.
  void ask_pods(const std::vector<Stream*>& streams) {
    // A few pods at a time: hundreds of whole pods read and parsed at once (every
    // stream ending together while the watch is behind) would be the follow's peak.
    constexpr size_t kAtOnce = 16;
    for (size_t from = 0; from < streams.size(); from += kAtOnce) {
      const size_t n = std::min(kAtOnce, streams.size() - from);
      std::vector<net::Request> reqs;
      reqs.reserve(n);
      for (size_t k = 0; k < n; ++k) {
        reqs.push_back(client_.request("GET", streams[from + k]->pod_path));
      }
      auto resps = get_all(reqs);
      std::vector<std::optional<json>> pods(n);
      for (size_t k = 0; k < n; ++k) {
        if (resps[k].failure == net::TransportFailure::kNone && resps[k].status == 404) continue;
        client_.check(reqs[k], resps[k]);
        pods[k] = json::parse(resps[k].body);
        std::string().swap(resps[k].body);
      }
      const auto now = env_.clock->steady_now();
      std::lock_guard<std::mutex> lk(mu_);
      for (size_t k = 0; k < n; ++k) pod_answered(*streams[from + k], pods[k], now);
      cv_.notify_all();
    }
  }

  /// What a stream in kAskPod does with its pod as read (nullopt: gone). Under mu_.
  void pod_answered(Stream& st, const std::optional<json>& pod,
                    std::chrono::steady_clock::time_point now) {
    st.phase = Phase::kDone;
    if (st.after_400) {
      if (!pod) return;
      const json* status = pod->contains("status") ? &(*pod)["status"] : nullptr;
      const std::string phase =
          status && status->is_object() ? status->value("phase", "") : std::string();
      if ((phase == "Succeeded" || phase == "Failed") &&
          kube::container_state(*pod, st.container) != ContainerState::kTerminated) {
        return;  // ended without its container ever running: no log
      }
      st.phase = Phase::kSleeping;
      st.until = now + std::chrono::milliseconds(200);
      return;
    }
    if (!pod) {
      gone(st);
      return;
    }
    update_pod(*pod, false);
    if (kube::container_state(*pod, st.container) == ContainerState::kTerminated) {
      last_line(st);
      return;
    }
    retry_later(st, now);
  }

  /// Sends `reqs` on the transport's loop, all at once, and waits for every answer (mu_
  /// not held): over the connections that the streams use, rather than a new one. A
  /// 401, or a failure worth trying again, is sent again the usual way (send_unchecked
  /// renews the credentials it can, and retries with backoff).
  std::vector<net::Response> get_all(const std::vector<net::Request>& reqs) {
    struct Latch {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
      std::vector<net::Response> answers;
    };
    auto latch = std::make_shared<Latch>();
    latch->left = reqs.size();
    latch->answers.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      client_.start_unchecked(reqs[i], [latch, i](net::Response resp) {
        std::lock_guard<std::mutex> lk(latch->mu);
        latch->answers[i] = std::move(resp);
        if (--latch->left == 0) latch->cv.notify_all();
      });
    }
    std::vector<net::Response> answers;
    {
      std::unique_lock<std::mutex> lk(latch->mu);
      latch->cv.wait(lk, [&] { return latch->left == 0; });
      answers = std::move(latch->answers);
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      const bool unauthorized =
          answers[i].failure == net::TransportFailure::kNone && answers[i].status == 401;
      if (unauthorized || net::is_retryable(answers[i])) {
        answers[i] = client_.send_unchecked(reqs[i]);
      }
    }
    return answers;
  }

  /// Starts the request of a stream in kStreaming (mu_ not held): from the last line
  /// seen, or as the options say the first time.
  void begin_request(Stream& s) {
    kube::Query q{{"container", s.container}, {"timestamps", "true"}, {"follow", "true"}};
    if (s.dedup.has_last()) {
      // The server takes whole seconds: the overlap is dropped by `dedup`.
      const std::int64_t second = s.dedup.last() - s.dedup.last() % 1'000'000'000;
      q.emplace_back("sinceTime", format_rfc3339(from_ns(second)));
    } else {
      if (opts_.since) q.emplace_back("sinceTime", format_rfc3339(*opts_.since));
      if (opts_.tail) q.emplace_back("tailLines", std::to_string(*opts_.tail));
    }
    if (!s.first) s.dedup.reconnect();
    s.first = false;
    s.status = 0;
    s.stopped = false;
    s.lines = LineFramer();
    s.error_body.clear();

    auto req = client_.request("GET", s.log_path, q);
    s.url = req.url;
    req.headers = {{"Accept", "*/*"}};
    req.timeout = std::chrono::milliseconds(0);
    req.cancelled = [this] { return stop_.load(); };
    req.lean = true;
    req.on_headers = [&s](int status, const net::Headers&) { s.status = status; };
    req.on_data = [this, &s](std::string_view data) {
      if (s.status < 200 || s.status >= 300) {
        net::append_capped(s.error_body, data, kMaxErrorBodyBytes);  // for the message
        return true;
      }
      std::lock_guard<std::mutex> lk(sink_mu_);
      const bool ok =
          !stop_ && s.lines.feed(data, [&](std::string_view raw) { return handle_line(s, raw); });
      if (opts_.flush) opts_.flush();
      if (!ok) {
        s.stopped = true;
        sink_stopped();
        return false;
      }
      return true;
    };
    client_.start_unchecked(std::move(req), [this, &s](net::Response resp) {
      // Notified under the lock: once it is released, run() may return and the
      // follower be gone.
      std::lock_guard<std::mutex> lk(mu_);
      s.resp = std::move(resp);
      s.phase = Phase::kEnded;
      cv_.notify_all();
    });
  }

  struct Track {
    std::set<std::string> done;  ///< pods followed or skipped
    bool streaming = false;
    int followed = 0;
  };

  static constexpr int kMaxFailures = 30;
  /// How long a stream that ended waits for the pod watch to say why.
  static constexpr std::chrono::milliseconds kSettleWait{500};
  /// Of an error answer, the first this many bytes are kept (for its message).
  static constexpr size_t kMaxErrorBodyBytes = 1 << 20;

  kube::Client& client_;
  const Env& env_;
  const std::string ns_;
  const std::string run_;
  const kube::ResourceType workload_;  ///< the run's Job, or its operator's object
  const LogOptions& opts_;
  const LogSink& sink_;
  const std::string rank_prefix_;

  std::mutex mu_;  // everything below except stop_, the threads and sink_mu_
  std::condition_variable cv_;
  std::map<std::string, PodView> pods_;  // by uid
  std::map<std::string, int> replica_of_;
  std::map<int, Track> tracks_;
  std::uint64_t seen_ = 0;
  std::vector<LogLine> notices_;
  std::list<Stream> streams_;  ///< the streams being followed (under mu_)
  bool pods_listed_ = false;
  bool job_listed_ = false;
  bool job_exists_ = false;
  bool job_seen_ = false;
  bool job_done_ = false;
  std::string job_uid_;  ///< of the run's Job
  int indexes_ = 0;      ///< its completions, when it is an Indexed Job
  bool final_list_done_ = false;
  std::optional<Error> error_;

  std::atomic<bool> stop_{false};
  std::mutex sink_mu_;
  LogLine scratch_;  ///< the line handed to the sink (under sink_mu_)
  std::vector<std::thread> watchers_;
};

}  // namespace

void follow_kube_logs(kube::Client& client, const Env& env, const std::string& ns,
                      const std::string& run, const kube::ResourceType& workload,
                      const LogOptions& opts, const LogSink& sink) {
  Follower(client, env, ns, run, workload, opts, sink).run();
}

}  // namespace ktrain::backend
