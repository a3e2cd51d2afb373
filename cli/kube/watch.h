#pragma once
// List, then watch: how ktrain keeps an up-to-date view of a run's pods and Job
// (`logs --follow`, `status --watch`). A list gives the objects and a
// resourceVersion; a watch from that version streams every change after it. A
// watch that ends is resumed from the last version seen (an event or a BOOKMARK);
// 410 Gone (the version is older than the server keeps) leads to a fresh list;
// a dropped connection is retried with backoff.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "kube/client.h"

namespace ktrain::kube {

/// What list_watch tells its caller. Both are called from the calling thread.
struct WatchHandlers {
  /// After each (re)list: every object of the collection, replacing what was known.
  std::function<void(std::vector<nlohmann::json>& items)> on_list;
  /// One change: "ADDED", "MODIFIED" or "DELETED", and the object.
  std::function<void(const std::string& type, nlohmann::json& object)> on_event;
};

/// Options of list_watch.
struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  /// Object keys dropped while parsing (e.g. "managedFields"), as ListOptions::drop_keys.
  std::vector<std::string> drop_keys;
  /// Polled at least every 100 ms; true ends list_watch.
  std::function<bool()> cancelled;
  /// Consecutive answers that are no watch (no event in between) before giving up.
  int max_failures = 30;
  /// How long connections may keep failing before giving up (0: api_grace(env)).
  std::chrono::seconds give_up_after{0};
};

/// How long a follow or watch goes on trying an API server that does not answer before
/// it ends (exit 3): KTRAIN_API_GRACE seconds, default 60.
std::chrono::seconds api_grace(const Env& env);

/// The error that ends a follow whose API server has not answered for `grace`: `cause`
/// (what the last try said) and what to do, exit 3.
Error gave_up_on_server(const Error& cause, std::chrono::seconds grace);

/// Lists the collection at `path`, then watches it until `opts.cancelled` says stop.
/// Throws Error for API errors other than 410 Gone (e.g. 403), and (exit 3) after
/// `max_failures` connections in a row failed, or failures for `give_up_after`.
void list_watch(Client& client, const Env& env, const std::string& path, const WatchOptions& opts,
                const WatchHandlers& handlers);

/// Sleeps `d` on env.clock in steps of at most 100 ms; false when `cancelled` said stop.
bool sleep_unless_cancelled(const Env& env, std::chrono::milliseconds d,
                            const std::function<bool()>& cancelled);

/// The delay before reconnection attempt `failures` (1, 2, ...): 100 ms doubling up
/// to 5 s.
std::chrono::milliseconds reconnect_delay(int failures);

}  // namespace ktrain::kube
