#include "backend/kube_follow.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/kube_backend.h"
#include "backend/log_line.h"
#include "base/error.h"
#include "base/timefmt.h"
#include "kube/run_state.h"
#include "kube/watch.h"

namespace ktrain::backend {

using nlohmann::json;

namespace {

std::int64_t to_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_ns(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

}  // namespace

std::optional<std::int64_t> TimestampParser::parse(std::string_view ts) {
  if (ts.size() < 20) return std::nullopt;
  size_t pos = 19;
  std::int64_t frac = 0;
  if (ts[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < ts.size() && ts[pos] >= '0' && ts[pos] <= '9') {
      if (n < 9) frac = frac * 10 + (ts[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (; n < 9; ++n) frac *= 10;
  }
  if (pos + 1 == ts.size() && (ts[pos] == 'Z' || ts[pos] == 'z')) {
    const std::string_view second = ts.substr(0, 19);
    if (second != second_) {
      auto t = parse_rfc3339(std::string(second) + "Z");
      if (!t) return std::nullopt;
      second_ = std::string(second);
      second_ns_ = to_ns(*t);
    }
    return second_ns_ + frac;
  }
  auto t = parse_rfc3339(ts);  // an offset instead of Z
  if (!t) return std::nullopt;
  return to_ns(*t);
}

void LineDedup::reconnect() {
  if (!has_last_) return;
  caught_up_ = false;
  repeated_at_last_ = 0;
}

bool LineDedup::accept(std::int64_t ts) {
  if (!caught_up_) {
    if (ts < last_) return false;
    if (ts == last_ && ++repeated_at_last_ <= delivered_at_last_) return false;
    caught_up_ = true;
  }
  if (!has_last_ || ts > last_) {
    has_last_ = true;
    last_ = ts;
    delivered_at_last_ = 1;
  } else if (ts == last_) {
    ++delivered_at_last_;
  }
  // ts < last_ on a connection that has caught up: out of order in the log itself;
  // delivered, and the resume point stays where it is.
  return true;
}

namespace {

enum class ContainerState { kNone, kWaiting, kRunning, kTerminated };

/// What the follower needs to know of a pod.
struct PodView {
  std::string name;
  std::string created;     ///< creationTimestamp (RFC 3339, seconds: sorts as text)
  std::uint64_t seen = 0;  ///< order of first sight: ties within a second (watch order)
  int index = -1;
  std::string phase;
  ContainerState state = ContainerState::kNone;
  bool deleted = false;
  std::string blocked;       ///< why its container cannot start ("" when nothing is wrong)
  std::string blocked_key;   ///< the kind of `blocked` (ImagePullBackOff counts as ErrImagePull)
  std::string blocked_told;  ///< the blocked_key last told the user
};

ContainerState container_state(const json& pod, const std::string& container) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return ContainerState::kNone;
  auto cs = st->find("containerStatuses");
  if (cs == st->end() || !cs->is_array()) return ContainerState::kNone;
  for (const auto& c : *cs) {
    if (!c.is_object() || c.value("name", "") != container) continue;
    auto state = c.find("state");
    if (state == c.end() || !state->is_object()) return ContainerState::kNone;
    if (state->contains("terminated")) return ContainerState::kTerminated;
    if (state->contains("running")) return ContainerState::kRunning;
    if (state->contains("waiting")) return ContainerState::kWaiting;
  }
  return ContainerState::kNone;
}

/// Why `container` of `pod` cannot start, in words, and the kind of problem (for
/// telling it once): a waiting reason other than the usual ones on the way to running,
/// or an init container that cannot pull its image or failed. ("", "") when none.
std::pair<std::string, std::string> blocked_start(const json& pod, const std::string& container) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return {};
  auto key_of = [](const std::string& reason) {
    return reason == "ImagePullBackOff" ? std::string("ErrImagePull") : reason;
  };
  auto waiting_text = [](const json& w) {
    std::string text = w.value("reason", "");
    if (auto m = w.value("message", ""); !m.empty()) text += ": " + m;
    return text;
  };
  if (auto cs = st->find("containerStatuses"); cs != st->end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (!c.is_object() || c.value("name", "") != container) continue;
      auto state = c.find("state");
      if (state == c.end() || !state->is_object()) break;
      auto w = state->find("waiting");
      if (w == state->end() || !w->is_object()) return {};
      const std::string reason = w->value("reason", "");
      if (!reason.empty() && reason != "ContainerCreating" && reason != "PodInitializing") {
        return {waiting_text(*w), key_of(reason)};
      }
    }
  }
  if (auto ics = st->find("initContainerStatuses"); ics != st->end() && ics->is_array()) {
    for (const auto& c : *ics) {
      if (!c.is_object()) continue;
      const std::string name = c.value("name", "");
      auto state = c.find("state");
      if (state == c.end() || !state->is_object()) return {};
      if (auto t = state->find("terminated"); t != state->end() && t->is_object()) {
        const int code = t->value("exitCode", 0);
        if (code == 0) continue;
        return {"init container " + name + " exited " + std::to_string(code),
                "init:" + name + ":exit"};
      }
      auto w = state->find("waiting");
      if (w == state->end() || !w->is_object()) return {};
      const std::string reason = w->value("reason", "");
      if (reason.empty() || reason == "PodInitializing") return {};
      return {"init container " + name + ": " + waiting_text(*w),
              "init:" + name + ":" + key_of(reason)};
    }
  }
  return {};
}

/// Follows one run; see follow_kube_logs.
class Follower {
 public:
  Follower(kube::Client& client, const Env& env, const std::string& ns, const std::string& run,
           const LogOptions& opts, const LogSink& sink)
      : client_(client),
        env_(env),
        ns_(ns),
        run_(run),
        opts_(opts),
        sink_(sink),
        container_(opts.container.empty() ? kube::kTrainContainer : opts.container),
        rank_prefix_(opts.rank ? "[rank " + std::to_string(*opts.rank) + "]" : std::string()) {}

  void run() {
    const auto pod_type = kube::resource_type("v1", "Pod");
    const auto job_type = kube::resource_type("batch/v1", "Job");
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
          notices_.push_back("run " + run_ + " was deleted");
        }
      } else {
        job_exists_ = true;
        update_job(job);
      }
      cv_.notify_all();
    };
    const std::string jobs_path = kube::collection_path(job_type, ns_);
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
    }
    cv_.notify_all();
    for (auto& t : streams_) t.join();
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
    pv.name = md->value("name", "");
    pv.created = md->value("creationTimestamp", "");
    if (pv.index < 0) {
      pv.index = kube::pod_rank(pod);
      if (pv.index < 0) {
        // A Deployment's pod (a serve run): replicas are numbered as they appear.
        auto [it, fresh] = replica_of_.emplace(pv.name, static_cast<int>(replica_of_.size()));
        pv.index = it->second;
      }
    }
    if (auto st = pod.find("status"); st != pod.end() && st->is_object()) {
      pv.phase = st->value("phase", "");
    }
    const auto cs = container_state(pod, container_);
    if (cs != ContainerState::kNone) pv.state = cs;
    std::tie(pv.blocked, pv.blocked_key) = blocked_start(pod, container_);
    if (deleted) pv.deleted = true;
  }

  void update_job(const json& job) {
    job_seen_ = true;
    const auto state = kube::summarize_job(job).state;
    job_done_ = state == RunState::kSucceeded || state == RunState::kFailed;
  }

  /// The run has ended: its Job finished or went away, and no stream is left.
  bool ended() const {
    if (!pods_listed_ || !job_listed_) return false;
    if (!(job_done_ || (job_seen_ && !job_exists_))) return false;
    for (const auto& [idx, t] : tracks_) {
      if (t.streaming) return false;
    }
    return !has_startable();
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
      streams_.emplace_back(
          [this, index = pv->index, uid = uid, name = pv->name, attempt, announce] {
            guard([&] { stream(index, uid, name, attempt, announce); });
            {
              std::lock_guard<std::mutex> lk(mu_);
              tracks_[index].streaming = false;
            }
            cv_.notify_all();
          });
    }
  }

  /// Prints the queued notices (under mu_, released while printing).
  void flush_notices(std::unique_lock<std::mutex>& lk) {
    while (!notices_.empty()) {
      std::string text = std::move(notices_.front());
      notices_.erase(notices_.begin());
      lk.unlock();
      LogLine n;
      n.notice = true;
      n.text = std::move(text);
      emit(n);
      lk.lock();
    }
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

  void notice(int index, const std::string& text) {
    LogLine n;
    n.rank = index;
    n.notice = true;
    n.text = text;
    emit(n);
  }

  /// Waits until the pod's container has started (or the pod ended or went away);
  /// false when the follow stops first.
  /// While it waits, says once why the container cannot start (an image that cannot be
  /// pulled, a missing Secret, a failed init container), rather than waiting in silence.
  bool wait_started(const std::string& uid) {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      bool tell = false;
      cv_.wait(lk, [&] {
        if (stop_) return true;
        const PodView& pv = pods_[uid];
        tell = !pv.blocked_key.empty() && pv.blocked_key != pv.blocked_told;
        return tell || pv.deleted || pv.state == ContainerState::kRunning ||
               pv.state == ContainerState::kTerminated || pv.phase == "Succeeded" ||
               pv.phase == "Failed";
      });
      if (stop_ || !tell) return !stop_;
      PodView& pv = pods_[uid];
      pv.blocked_told = pv.blocked_key;
      const std::string text = "node " + std::to_string(pv.index) + " (pod " + pv.name +
                               ") cannot start yet: " + pv.blocked;
      const int index = pv.index;
      lk.unlock();
      notice(index, text);
      lk.lock();
    }
  }

  /// Waits (at most kSettleWait) until the pod watch shows the pod's container
  /// terminated or the pod deleted; returns the container's state as known then.
  ContainerState wait_settled(const std::string& uid) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, kSettleWait, [&] {
      const PodView& pv = pods_[uid];
      return stop_ || pv.deleted || pv.state == ContainerState::kTerminated;
    });
    return pods_[uid].state;
  }

  ContainerState known_state(const std::string& uid) {
    std::lock_guard<std::mutex> lk(mu_);
    return pods_[uid].state;
  }

  /// Follows one pod's log to its end, resuming after every drop.
  void stream(int index, const std::string& uid, const std::string& name, int attempt,
              bool announce) {
    if (announce) {
      notice(index, "node " + std::to_string(index) + " restarted, attempt " +
                        std::to_string(attempt) + " (pod " + name + ")");
    }
    const auto pod_type = kube::resource_type("v1", "Pod");
    const std::string log_path = kube::object_path(pod_type, ns_, name, "log");
    const std::string pod_path = kube::object_path(pod_type, ns_, name);
    LineDedup dedup;
    TimestampParser timestamps;
    bool first = true;
    int failures = 0;

    // A line goes to the sink straight from the chunk it came in, through one LogLine
    // shared by every stream (under sink_mu_): with hundreds of streams, a buffer of
    // lines per stream would cost more memory than the lines. False when the follow
    // stops.
    auto handle_line = [&](std::string_view raw) {
      const auto sp = raw.find(' ');
      std::optional<std::int64_t> ts;
      if (sp != std::string_view::npos && sp >= 20) ts = timestamps.parse(raw.substr(0, sp));
      if (ts && !dedup.accept(*ts)) return true;
      std::string_view text = ts ? raw.substr(sp + 1) : raw;
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      if (!rank_prefix_.empty() && text.substr(0, rank_prefix_.size()) != rank_prefix_) {
        return true;
      }
      LogLine& line = scratch_;
      line.rank = index;
      line.timestamp.assign(ts ? raw.substr(0, sp) : std::string_view());
      line.text.assign(text);
      return sink_(line);
    };

    // The pod is gone: say so unless its container was seen to finish.
    auto gone = [&] {
      if (known_state(uid) != ContainerState::kTerminated) {
        notice(index, "node " + std::to_string(index) + ": pod " + name +
                          " was deleted; its log ends here");
      }
    };

    while (!stop_) {
      if (!wait_started(uid)) return;
      kube::Query q{{"container", container_}, {"timestamps", "true"}, {"follow", "true"}};
      if (dedup.has_last()) {
        // The server takes whole seconds: the overlap is dropped by `dedup`.
        const std::int64_t second = dedup.last() - dedup.last() % 1'000'000'000;
        q.emplace_back("sinceTime", format_rfc3339(from_ns(second)));
      } else {
        if (opts_.since) q.emplace_back("sinceTime", format_rfc3339(*opts_.since));
        if (opts_.tail) q.emplace_back("tailLines", std::to_string(*opts_.tail));
      }
      if (!first) dedup.reconnect();
      first = false;

      auto req = client_.request("GET", log_path, q);
      req.headers = {{"Accept", "*/*"}};
      req.timeout = std::chrono::milliseconds(0);
      req.cancelled = [this] { return stop_.load(); };
      req.lean = true;
      int status = 0;
      bool stopped = false;
      LineFramer lines;
      std::string error_body;
      req.on_headers = [&status](int s, const net::Headers&) { status = s; };
      req.on_data = [&](std::string_view data) {
        if (status < 200 || status >= 300) {
          net::append_capped(error_body, data, kMaxErrorBodyBytes);  // for the message
          return true;
        }
        std::lock_guard<std::mutex> lk(sink_mu_);
        const bool ok = !stop_ && lines.feed(data, handle_line);
        if (opts_.flush) opts_.flush();
        if (!ok) {
          stopped = true;
          sink_stopped();
          return false;
        }
        return true;
      };
      auto resp = client_.send_unchecked(req);
      if (stopped || stop_) return;
      const bool progressed = lines.progressed();
      if (progressed) failures = 0;

      if (resp.failure == net::TransportFailure::kNone && status >= 200 && status < 300) {
        // The stream ended: the container finished, the pod went away, or the
        // connection was closed politely in the middle (then resume). The pod watch
        // usually tells which by now; the API server is asked only when it has not
        // (hundreds of streams ending together would otherwise all ask at once).
        bool terminated = wait_settled(uid) == ContainerState::kTerminated;
        if (!terminated) {
          auto pod = client_.get_if_exists(pod_path);
          if (!pod) {
            gone();
            return;
          }
          std::lock_guard<std::mutex> lk(mu_);
          update_pod(*pod, false);
          terminated = container_state(*pod, container_) == ContainerState::kTerminated;
        }
        if (terminated) {
          if (!lines.rest().empty()) {
            std::lock_guard<std::mutex> lk(sink_mu_);  // a last line without "\n"
            if (!stop_ && !handle_line(lines.rest())) sink_stopped();
          }
          return;
        }
      } else if (resp.failure == net::TransportFailure::kNone && status == 404) {
        gone();
        return;
      } else if (resp.failure == net::TransportFailure::kNone && status == 400) {
        // The container is not running yet (or never ran): wait for the pod to move.
        auto pod = client_.get_if_exists(pod_path);
        if (!pod) return;
        const std::string phase = (*pod)["status"].value("phase", "");
        if ((phase == "Succeeded" || phase == "Failed") &&
            container_state(*pod, container_) != ContainerState::kTerminated) {
          return;  // ended without its container ever running: no log
        }
        if (!kube::sleep_unless_cancelled(env_, std::chrono::milliseconds(200),
                                          [this] { return stop_.load(); })) {
          return;
        }
        continue;
      } else if (resp.failure == net::TransportFailure::kNone && status != 429 && status < 500) {
        resp.body = error_body;
        client_.check(req, resp);  // 401, 403, ...: throws
      }
      if (progressed) continue;  // resume at once after a drop in the middle of data
      if (++failures >= kMaxFailures) {
        resp.body = error_body;
        if (resp.failure != net::TransportFailure::kNone) {
          throw kube::transport_error(client_.config(), req, resp);
        }
        client_.check(req, resp);
        throw Error("following pod " + name + ": the log stream keeps ending without data");
      }
      if (!kube::sleep_unless_cancelled(env_, kube::reconnect_delay(failures),
                                        [this] { return stop_.load(); })) {
        return;
      }
    }
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
  const LogOptions& opts_;
  const LogSink& sink_;
  const std::string container_;
  const std::string rank_prefix_;

  std::mutex mu_;  // everything below except stop_, the threads and sink_mu_
  std::condition_variable cv_;
  std::map<std::string, PodView> pods_;  // by uid
  std::map<std::string, int> replica_of_;
  std::map<int, Track> tracks_;
  std::uint64_t seen_ = 0;
  std::vector<std::string> notices_;
  bool pods_listed_ = false;
  bool job_listed_ = false;
  bool job_exists_ = false;
  bool job_seen_ = false;
  bool job_done_ = false;
  bool final_list_done_ = false;
  std::optional<Error> error_;

  std::atomic<bool> stop_{false};
  std::mutex sink_mu_;
  LogLine scratch_;  ///< the line handed to the sink (under sink_mu_)
  std::vector<std::thread> watchers_;
  std::vector<std::thread> streams_;
};

}  // namespace

void follow_kube_logs(kube::Client& client, const Env& env, const std::string& ns,
                      const std::string& run, const LogOptions& opts, const LogSink& sink) {
  Follower(client, env, ns, run, opts, sink).run();
}

}  // namespace ktrain::backend
