#include "kube/watch.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#include "base/error.h"
#include "base/json_field.h"

namespace ktrain::kube {

using nlohmann::json;

bool sleep_unless_cancelled(const Env& env, std::chrono::milliseconds d,
                            const std::function<bool()>& cancelled) {
  while (d.count() > 0) {
    if (cancelled && cancelled()) return false;
    const auto step = std::min(d, std::chrono::milliseconds(100));
    env.clock->sleep_for(step);
    d -= step;
  }
  return !(cancelled && cancelled());
}

std::chrono::seconds api_grace(const Env& env) {
  if (auto v = env.var("KTRAIN_API_GRACE"); v && !v->empty()) {
    try {
      std::size_t used = 0;
      const long long s = std::stoll(*v, &used);
      if (used == v->size() && s > 0) return std::chrono::seconds(s);
    } catch (const std::exception&) {
    }
    throw UsageError("KTRAIN_API_GRACE=" + *v + ": expected a number of seconds above 0");
  }
  return std::chrono::seconds(60);
}

Error gave_up_on_server(const Error& cause, std::chrono::seconds grace) {
  return Error(std::string(cause.what()) + "\nktrain: the API server has not answered for " +
                   std::to_string(grace.count()) +
                   "s: giving up (the run itself goes on; run the command again once the "
                   "server is back, or set KTRAIN_API_GRACE to wait longer)",
               exit_code::kUnreachable);
}

std::chrono::milliseconds reconnect_delay(int failures) {
  long long ms = 100;
  for (int i = 1; i < failures && ms < 5000; ++i) ms *= 2;
  return std::chrono::milliseconds(std::min(ms, 5000LL));
}

namespace {

/// How one watch connection ended.
enum class WatchEnd { kResume, kRelist, kCancelled, kTooLong };

/// The longest watch event read: 16 MiB. An event is one object; the API server
/// stores none larger than etcd's 1.5 MiB request limit, so a longer line is a
/// server gone wrong, and is not buffered without end waiting for its newline.
constexpr std::size_t kMaxWatchEventBytes = std::size_t{16} << 20;

/// Of an error answer, the first this many bytes are kept (for its message).
constexpr std::size_t kMaxErrorBodyBytes = std::size_t{1} << 20;

}  // namespace

void list_watch(Client& client, const Env& env, const std::string& path, const WatchOptions& opts,
                const WatchHandlers& handlers) {
  auto cancelled = [&opts] { return opts.cancelled && opts.cancelled(); };
  const auto& drop = opts.drop_keys;
  auto keep = [&drop](int, json::parse_event_t event, json& parsed) {
    if (drop.empty() || event != json::parse_event_t::key) return true;
    const auto& k = parsed.get_ref<const std::string&>();
    return std::find(drop.begin(), drop.end(), k) == drop.end();
  };

  int failures = 0;
  std::chrono::steady_clock::time_point failing_since{};  // the first failure in a row
  const std::chrono::seconds grace =
      opts.give_up_after.count() > 0 ? opts.give_up_after : api_grace(env);
  std::string rv;
  bool need_list = true;
  while (!cancelled()) {
    if (need_list) {
      ListOptions lo;
      lo.label_selector = opts.label_selector;
      lo.field_selector = opts.field_selector;
      lo.drop_keys = opts.drop_keys;
      std::vector<json> items;
      try {
        rv = client.list(path, lo, [&items](json& item) { items.push_back(std::move(item)); });
      } catch (const ApiError&) {
        throw;
      } catch (const Error& e) {
        // Below HTTP (exit 3): the server may be restarting; try again, for a while.
        if (failures++ == 0) failing_since = env.clock->steady_now();
        if (env.clock->steady_now() - failing_since >= grace) throw gave_up_on_server(e, grace);
        if (!sleep_unless_cancelled(env, reconnect_delay(failures), opts.cancelled)) return;
        continue;
      }
      if (handlers.on_list) handlers.on_list(items);
      need_list = false;
      failures = 0;
    }

    Query q{{"watch", "1"}, {"allowWatchBookmarks", "true"}, {"resourceVersion", rv}};
    if (!opts.label_selector.empty()) q.emplace_back("labelSelector", opts.label_selector);
    if (!opts.field_selector.empty()) q.emplace_back("fieldSelector", opts.field_selector);
    auto req = client.request("GET", path, q);
    req.headers = {{"Accept", "application/json"}};
    req.timeout = std::chrono::milliseconds(0);
    req.cancelled = opts.cancelled;
    int status = 0;
    std::string partial, error_body;
    WatchEnd end = WatchEnd::kResume;
    bool progressed = false;
    req.on_headers = [&status](int s, const net::Headers&) { status = s; };
    req.on_data = [&](std::string_view data) {
      if (status < 200 || status >= 300) {
        net::append_capped(error_body, data, kMaxErrorBodyBytes);
        return true;
      }
      partial.append(data);
      size_t start = 0;
      for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string_view line = std::string_view(partial).substr(start, nl - start);
        if (line.empty()) continue;
        json ev = json::parse(line, keep, /*allow_exceptions=*/false);
        if (!ev.is_object()) continue;  // not JSON: skipped, the next event resyncs
        const std::string type = string_field(ev, "type");
        auto obj = ev.find("object");
        if (obj == ev.end() || !obj->is_object()) continue;
        if (type == "ERROR") {
          // A metav1.Status: 410 Gone (Expired) means list again; anything else too,
          // since the watch cannot go on from this version.
          end = WatchEnd::kRelist;
          partial.clear();
          return false;
        }
        if (auto md = obj->find("metadata"); md != obj->end() && md->is_object()) {
          if (auto v = string_field(*md, "resourceVersion"); !v.empty()) rv = v;
        }
        progressed = true;
        if (type == "BOOKMARK") continue;
        if (handlers.on_event) handlers.on_event(type, *obj);
      }
      partial.erase(0, start);
      if (partial.size() > kMaxWatchEventBytes) {
        end = WatchEnd::kTooLong;
        return false;
      }
      return true;
    };
    auto resp = client.send_unchecked(req);
    if (end == WatchEnd::kTooLong) {
      throw Error("watching " + path + ": an event from the API server is longer than " +
                  net::size_text(kMaxWatchEventBytes) +
                  " (no object is that large; the server, or something between, is wrong)");
    }
    if (cancelled()) return;
    if (progressed) failures = 0;
    if (end == WatchEnd::kRelist) {
      need_list = true;
      continue;
    }
    if (resp.failure == net::TransportFailure::kNone && status == 410) {
      need_list = true;
      continue;
    }
    if (resp.failure == net::TransportFailure::kNone && (status < 200 || status >= 300) &&
        status != 429 && status < 500) {
      resp.body = error_body;
      client.check(req, resp);  // throws
    }
    // Ended (the server's watch timeout), dropped, or a 429/5xx: resume from rv.
    if (resp.failure != net::TransportFailure::kNone || status >= 300 || !progressed) {
      if (failures++ == 0) failing_since = env.clock->steady_now();
      // Connections that fail are tried for the grace period; answers that are no
      // watch, max_failures times.
      const bool unreachable = resp.failure != net::TransportFailure::kNone;
      const bool too_long = unreachable && env.clock->steady_now() - failing_since >= grace;
      if ((!unreachable && failures >= opts.max_failures) || too_long) {
        resp.body = error_body;
        if (resp.failure != net::TransportFailure::kNone) {
          const Error e = transport_error(client.config(), req, resp);
          if (too_long) throw gave_up_on_server(e, grace);
          throw e;
        }
        client.check(req, resp);
        throw Error("watching " + path + ": the API server keeps ending the watch");
      }
      if (!sleep_unless_cancelled(env, reconnect_delay(failures), opts.cancelled)) return;
    }
  }
}

}  // namespace ktrain::kube
