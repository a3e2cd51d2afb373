// CurlTransport: requests on libcurl's multi interface, from one loop thread for the
// requests started to run on their own (streams) and from the caller's for the rest.
#include "net/curl_transport.h"

#include <curl/curl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/error.h"
#include "net/curl_lib.h"
#include "net/curl_transfer.h"

namespace ktrain::net {

using curl::classify;
using curl::has_header;
using curl::lib;
using curl::on_body;
using curl::on_header_line;
using curl::on_read;
using curl::on_seek;
using curl::origin_of;
using curl::release_tls_buffers;
using curl::set_protocols;
using curl::split_url;
using curl::Transfer;
using curl::UrlParts;

namespace {

void global_init() {
  lib();
}

constexpr long kLeanUploadBufferBytes = 16384;  // libcurl's smallest
// The receive buffer of a lean stream to a server known to answer over HTTP/1.x: a
// few log lines at a time. (Over HTTP/2 it stays at libcurl's 16 KiB: libcurl 7.88
// copies whole HTTP/2 frames, up to 16 KiB, into it, and overruns a smaller one.)
constexpr long kLeanHttp1ReceiveBufferBytes = 4096;

}  // namespace

/// A multi handle with the easy handles it has used; connections live in the multi's
/// cache, so a caller that gets the same session back reuses its connections.
struct Session {
  CURLM* multi = nullptr;
  std::vector<CURL*> idle;

  CURL* take() {
    if (idle.empty()) return lib().easy_init();
    CURL* e = idle.back();
    idle.pop_back();
    lib().easy_reset(e);
    return e;
  }
};

struct CurlTransport::Impl {
  CurlOptions options;
  CURLSH* share = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;
  std::mutex pool_mutex;
  std::vector<Session*> pool;

  /// Single requests (perform, and perform_all of one) from every thread run on one
  /// multi handle, driven by one thread started with the first of them: a multi handle
  /// costs some 30 KiB of tables, and hundreds of followed logs, each on a multi handle
  /// of its own, would spend more on those than on their connections. All of them
  /// share that handle's connections (and over HTTP/2, one connection). The caller's
  /// thread waits for its request to end while the loop thread calls its callbacks; a
  /// callback that makes a request of its own gets a session of its own instead.
  struct Loop {
    std::mutex mu;
    std::condition_variable done_cv;
    std::vector<Transfer*> incoming;  ///< queued by callers, taken by the loop
    bool quit = false;
    Session session;  ///< the multi handle and the easy handles kept for reuse
    std::thread thread;
    std::thread::id thread_id;
  };
  std::once_flag loop_once;
  Loop loop;
  /// Origins whose last answer came over HTTP/1.x (none had HTTP/2 to offer): lean
  /// streams to them ask for HTTP/1.1 and get a small receive buffer, which with
  /// hundreds of followed logs saves some 12 KiB each.
  std::mutex origins_mu;
  std::set<std::string> http1_origins;
  /// The origin a request's connection goes to (the tls-server-name's, where set).
  static std::string origin_key(const Request& r) {
    if (r.tls.server_name.empty()) return origin_of(r.url);
    UrlParts p = split_url(r.url);
    return p.scheme + "://" + r.tls.server_name + ":" + p.port;
  }
  bool speaks_http1(const std::string& origin) {
    std::lock_guard<std::mutex> g(origins_mu);
    return http1_origins.count(origin) > 0;
  }
  bool speaks_http1(const Request& r) { return speaks_http1(origin_key(r)); }
  /// Easy handles the loop keeps for reuse once their streams have ended.
  static constexpr size_t kLoopIdleHandles = 16;

  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Impl*>(user)->locks[static_cast<size_t>(data)].lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Impl*>(user)->locks[static_cast<size_t>(data)].unlock();
  }

  Session* acquire() {
    {
      std::lock_guard<std::mutex> g(pool_mutex);
      if (!pool.empty()) {
        Session* s = pool.back();
        pool.pop_back();
        return s;
      }
    }
    auto* s = new Session;
    s->multi = lib().multi_init();
    lib().multi_setopt(s->multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    lib().multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, options.max_host_connections);
    return s;
  }

  void release(Session* s) {
    std::lock_guard<std::mutex> g(pool_mutex);
    pool.push_back(s);
  }

  void setup(Transfer& t) {
    const Request& r = *t.req;
    CURL* e = t.easy;
    t.url = r.url;
    lib().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    lib().easy_setopt(e, CURLOPT_SHARE, share);
    lib().easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf.data());
    lib().easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    lib().easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    lib().easy_setopt(e, CURLOPT_USERAGENT, options.user_agent.c_str());
    lib().easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_line);
    lib().easy_setopt(e, CURLOPT_HEADERDATA, &t);
    lib().easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    lib().easy_setopt(e, CURLOPT_WRITEDATA, &t);
    lib().easy_setopt(e, CURLOPT_PRIVATE, &t);
    lib().easy_setopt(e, CURLOPT_FOLLOWLOCATION, r.follow_redirects ? 1L : 0L);
    lib().easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
    // Only HTTP(S), and a redirect never goes from HTTPS to plain HTTP (or to file:,
    // ftp:, ...). libcurl keeps the Authorization header off a redirect to another host,
    // port or scheme; said here rather than left to its default.
    set_protocols(e, "http,https", split_url(r.url).scheme == "http" ? "http,https" : "https");
    lib().easy_setopt(e, CURLOPT_UNRESTRICTED_AUTH, 0L);
    // The *_proxy variables are not used implicitly: "" disables them.
    lib().easy_setopt(e, CURLOPT_PROXY, r.proxy.c_str());

    // Timeouts.
    lib().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
    lib().easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
    if (r.read_timeout.count() > 0) {
      lib().easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      lib().easy_setopt(
          e, CURLOPT_LOW_SPEED_TIME,
          static_cast<long>(std::max<long long>(1, (r.read_timeout.count() + 999) / 1000)));
    }

    if (r.lean) {
      // Over TLS, libcurl copies the request into an upload buffer (64 KiB unless
      // told) before sending it; a GET needs the least there is.
      lib().easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, kLeanUploadBufferBytes);
      if (lib().ssl_ctx_ctrl) lib().easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, release_tls_buffers);
    }

    // TLS.
    // PEM data is handed to libcurl without a copy (CURL_BLOB_NOCOPY): the request
    // outlives its transfer, and a connection keeps a copy of its own. With hundreds
    // of followed logs and an embedded CA, certificate and key, the copies added up.
    const TlsConfig& tls = r.tls;
    if (tls.insecure_skip_verify) {
      lib().easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      lib().easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!tls.ca_file.empty()) lib().easy_setopt(e, CURLOPT_CAINFO, tls.ca_file.c_str());
    if (!tls.ca_pem.empty()) {
      curl_blob blob{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_NOCOPY};
      lib().easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (!tls.client_cert_pem.empty()) {
      curl_blob blob{const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
                     CURL_BLOB_NOCOPY};
      lib().easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
      lib().easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!tls.client_key_pem.empty()) {
      curl_blob blob{const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
                     CURL_BLOB_NOCOPY};
      lib().easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
      lib().easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    std::string host_header;
    if (!tls.server_name.empty()) {
      // tls-server-name: address the server by that name (SNI and verification), and
      // connect to the real host and port.
      UrlParts p = split_url(r.url);
      if (!p.host.empty()) {
        t.url = p.scheme + "://" + tls.server_name + ":" + p.port + p.rest;
        std::string connect_to = tls.server_name + ":" + p.port + ":" + p.host + ":" + p.port;
        t.connect_to = lib().slist_append(t.connect_to, connect_to.c_str());
        lib().easy_setopt(e, CURLOPT_CONNECT_TO, t.connect_to);
        if (!has_header(r.headers, "Host")) host_header = "Host: " + p.host + ":" + p.port;
      }
    }
    if (r.lean && speaks_http1(r)) {
      lib().easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
      lib().easy_setopt(e, CURLOPT_BUFFERSIZE, kLeanHttp1ReceiveBufferBytes);
    }
    lib().easy_setopt(e, CURLOPT_URL, t.url.c_str());

    // Headers.
    for (const auto& [k, v] : r.headers) {
      std::string line = v.empty() ? k + ";" : k + ": " + v;
      t.headers = lib().slist_append(t.headers, line.c_str());
    }
    if (!host_header.empty()) t.headers = lib().slist_append(t.headers, host_header.c_str());
    // No "Expect: 100-continue" round trip before bodies.
    t.headers = lib().slist_append(t.headers, "Expect:");

    // Method and body.
    const std::string& m = r.method;
    if (m == "HEAD") {
      lib().easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (r.body_reader) {
      lib().easy_setopt(e, CURLOPT_UPLOAD, 1L);
      lib().easy_setopt(e, CURLOPT_READFUNCTION, on_read);
      lib().easy_setopt(e, CURLOPT_READDATA, &t);
      lib().easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
      lib().easy_setopt(e, CURLOPT_SEEKDATA, &t);
      if (r.body_length >= 0) {
        lib().easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body_length));
      }
      lib().easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
    } else if (!r.body.empty() || m == "POST" || m == "PUT" || m == "PATCH") {
      lib().easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
      lib().easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      if (m != "POST") lib().easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
      if (!has_header(r.headers, "Content-Type")) {
        t.headers = lib().slist_append(t.headers, "Content-Type:");
      }
    } else if (m != "GET") {
      lib().easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
    }
    lib().easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  }

  void finish(Transfer& t, CURLcode code) {
    long status = 0;
    lib().easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    long version = 0;
    lib().easy_getinfo(t.easy, CURLINFO_HTTP_VERSION, &version);
    switch (version) {
      case CURL_HTTP_VERSION_1_0:
        t.resp.http_version = "1.0";
        break;
      case CURL_HTTP_VERSION_1_1:
        t.resp.http_version = "1.1";
        break;
      case CURL_HTTP_VERSION_2_0:
        t.resp.http_version = "2";
        break;
      case CURL_HTTP_VERSION_3:
        t.resp.http_version = "3";
        break;
      default:
        break;
    }
    if (status > 0 && version != 0) {
      // Which protocol the server speaks, for the next lean stream to it.
      std::lock_guard<std::mutex> g(origins_mu);
      if (version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1) {
        http1_origins.insert(origin_of(t.url));
      } else {
        http1_origins.erase(origin_of(t.url));
      }
    }
    if (t.aborted || t.too_large) code = CURLE_WRITE_ERROR;
    if (code == CURLE_UNSUPPORTED_PROTOCOL) t.refused_redirect = t.req->follow_redirects;
    t.resp.failure = t.too_large ? TransportFailure::kTooLarge : classify(code);
    if (code != CURLE_OK) {
      t.resp.failure_message =
          t.errbuf[0] ? std::string(t.errbuf.data()) : lib().easy_strerror(code);
      if (t.aborted) t.resp.failure_message = "stopped by the receiver";
      if (t.refused_redirect) {
        t.resp.failure = TransportFailure::kRedirect;
        t.resp.failure_message =
            "redirected to a URL that is not " +
            std::string(split_url(t.url).scheme == "http" ? "HTTP or HTTPS" : "HTTPS");
      }
      if (t.too_large) {
        t.resp.failure_message = "more than " + size_text(t.req->max_body_bytes);
        std::string().swap(t.resp.body);
      }
      if (t.short_body) {
        t.resp.failure_message = "the request body ended after " + std::to_string(t.read_offset) +
                                 " of " + std::to_string(t.req->body_length) + " bytes";
      }
      // Keep the status of an answer that was cut short or stopped; otherwise 0.
      if (t.resp.failure != TransportFailure::kAborted &&
          t.resp.failure != TransportFailure::kDropped &&
          t.resp.failure != TransportFailure::kTimeout &&
          t.resp.failure != TransportFailure::kTooLarge) {
        status = 0;
      }
    }
    t.resp.status = static_cast<int>(status);
    if (code == CURLE_OK) t.deliver_headers();
    lib().slist_free_all(t.headers);
    lib().slist_free_all(t.connect_to);
    t.headers = t.connect_to = nullptr;
  }

  /// Starts the shared loop's thread, once.
  void start_loop() {
    std::call_once(loop_once, [this] {
      loop.session.multi = lib().multi_init();
      lib().multi_setopt(loop.session.multi, CURLMOPT_PIPELINING,
                         static_cast<long>(CURLPIPE_MULTIPLEX));
      // Streams run until their end: none may wait for a connection slot.
      lib().multi_setopt(loop.session.multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
      lib().multi_setopt(loop.session.multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                         static_cast<long>(kStreamsPerConnection));
      loop.thread = std::thread([this] { run_loop(); });
      loop.thread_id = loop.thread.get_id();
    });
  }

  /// Hands a transfer to the loop.
  void enqueue(Transfer* t) {
    std::lock_guard<std::mutex> lk(loop.mu);
    loop.incoming.push_back(t);
    lib().multi_wakeup(loop.session.multi);
  }

  /// Starts `req` on the shared loop; `done` is called there when it has ended.
  void start_one(Request req, std::function<void(Response)> done) {
    start_loop();
    auto t = std::make_unique<Transfer>();
    t->owned = std::make_unique<Request>(std::move(req));
    t->req = t->owned.get();
    t->on_done = std::move(done);
    enqueue(t.release());
  }

  /// Runs one request on the shared loop; returns when it has ended.
  Response run_one(const Request& req) {
    start_loop();
    if (std::this_thread::get_id() == loop.thread_id) return std::move(run({&req}).front());
    Transfer t;
    t.req = &req;
    enqueue(&t);
    {
      std::unique_lock<std::mutex> lk(loop.mu);
      loop.done_cv.wait(lk, [&] { return t.done; });
    }
    return std::move(t.resp);
  }

  /// Gives the pages malloc holds free back to the system, at most once a second.
  /// Hundreds of TLS handshakes (a follow of every rank starting) leave free blocks
  /// between the ones that stay, which malloc keeps; 256 followed logs peak some
  /// 2 MiB lower with it. Called from the loop thread only.
  void return_free_memory() {
#if defined(__GLIBC__)
    const auto now = std::chrono::steady_clock::now();
    if (now - last_trim < std::chrono::seconds(1)) return;
    last_trim = now;
    malloc_trim(0);
#endif
  }
  std::chrono::steady_clock::time_point last_trim{};

  /// Streams the loop puts on one HTTP/2 connection: libcurl's cap
  /// (CURLMOPT_MAX_CONCURRENT_STREAMS, set to it) and what kube-apiserver behind the
  /// usual load balancers, and nginx, allow.
  static constexpr size_t kStreamsPerConnection = 100;

  /// The loop's streams to one origin, and those waiting to start. libcurl 7.88 puts a
  /// stream on a connection that is up and has room, but it does not count one that
  /// is still connecting: past 100 streams, every stream added opens a connection of
  /// its own (256 followed logs: 157 connections, where 3 do). So when the
  /// connections are full, one stream goes first and opens the next connection, and
  /// the others wait until it is up; then up to 99 more join it.
  struct OriginStreams {
    std::deque<Transfer*> waiting;
    size_t active = 0;
    Transfer* pioneer = nullptr;  ///< opening a connection; the others wait for it
  };

  /// The pioneer's connection is up (its request went out), or it has ended.
  bool connected(Transfer& t) {
    if (t.done || t.resp.status != 0) return true;
    curl_off_t pretransfer = 0;
    lib().easy_getinfo(t.easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
    return pretransfer > 0;
  }

  void run_loop() {
    std::vector<Transfer*> active;
    std::map<std::string, OriginStreams> origins;  // loop thread only
    auto start = [&](Transfer* t) {
      t->easy = loop.session.take();
      setup(*t);
      // A started request's headers are in libcurl's list now (its Authorization, a
      // token of a kilobyte or so, included): the copy kept for the stream goes.
      if (t->owned) Headers().swap(t->owned->headers);
      lib().multi_add_handle(loop.session.multi, t->easy);
      active.push_back(t);
    };
    auto admit = [&] {
      for (auto it = origins.begin(); it != origins.end();) {
        OriginStreams& o = it->second;
        if (o.pioneer && connected(*o.pioneer)) o.pioneer = nullptr;
        // To a server that answers HTTP/1.1, each stream has a connection of its own.
        const bool multiplexed = !speaks_http1(it->first);
        while (!o.waiting.empty() && !o.pioneer) {
          size_t room = o.waiting.size();
          if (multiplexed) room = kStreamsPerConnection - o.active % kStreamsPerConnection;
          if (multiplexed && o.active % kStreamsPerConnection == 0) {
            o.pioneer = o.waiting.front();
            room = 1;
          }
          for (; room > 0 && !o.waiting.empty(); --room) {
            start(o.waiting.front());
            o.waiting.pop_front();
            ++o.active;
          }
          if (multiplexed) break;  // the next ones, when these are on their connection
        }
        if (o.active == 0 && o.waiting.empty()) {
          it = origins.erase(it);
        } else {
          ++it;
        }
      }
    };
    auto end = [&](Transfer& t, CURLcode code) {
      lib().multi_remove_handle(loop.session.multi, t.easy);
      if (code == CURLE_ABORTED_BY_CALLBACK) t.aborted = true;
      finish(t, code);
      if (auto o = origins.find(origin_key(*t.req)); o != origins.end()) {
        --o->second.active;
        if (o->second.pioneer == &t) o->second.pioneer = nullptr;
      }
      if (loop.session.idle.size() < kLoopIdleHandles) {
        loop.session.idle.push_back(t.easy);
      } else {
        lib().easy_cleanup(t.easy);
      }
      complete(t);
    };
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(loop.mu);
        if (loop.quit) break;
        for (Transfer* t : loop.incoming) origins[origin_key(*t->req)].waiting.push_back(t);
        loop.incoming.clear();
      }
      admit();
      int running = 0;
      lib().multi_perform(loop.session.multi, &running);
      int left = 0;
      while (CURLMsg* msg = lib().multi_info_read(loop.session.multi, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Transfer* t = nullptr;
        lib().easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
        const CURLcode code = msg->data.result;
        active.erase(std::find(active.begin(), active.end(), t));
        end(*t, code);
      }
      return_free_memory();
      bool watched = false;  // some stream can be cancelled: look again within 100 ms
      for (auto& [origin, o] : origins) {
        for (size_t i = 0; i < o.waiting.size();) {
          Transfer* t = o.waiting[i];
          if (t->req->cancelled && t->req->cancelled()) {
            o.waiting.erase(o.waiting.begin() + static_cast<std::ptrdiff_t>(i));
            cancel_waiting(*t);
            continue;
          }
          watched = watched || static_cast<bool>(t->req->cancelled);
          ++i;
        }
        // A pioneer connecting: look again soon, for the streams behind it.
        watched = watched || (o.pioneer != nullptr && !o.waiting.empty());
      }
      for (size_t i = 0; i < active.size();) {
        Transfer* t = active[i];
        if (t->req->cancelled && t->req->cancelled()) {
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
          end(*t, CURLE_ABORTED_BY_CALLBACK);
          continue;
        }
        watched = watched || static_cast<bool>(t->req->cancelled);
        ++i;
      }
      lib().multi_poll(loop.session.multi, nullptr, 0, watched ? 100 : 1000, nullptr);
    }
    for (Transfer* t : active) end(*t, CURLE_ABORTED_BY_CALLBACK);
    for (auto& [origin, o] : origins) {
      for (Transfer* t : o.waiting) cancel_waiting(*t);
    }
  }

  /// Ends a transfer that never started: cancelled, or the loop stopping.
  void cancel_waiting(Transfer& t) {
    t.aborted = true;
    t.resp.failure = TransportFailure::kOther;
    t.resp.failure_message = "cancelled";
    complete(t);
  }

  /// A loop transfer has ended: its caller gets the answer (a started one through its
  /// callback, after which the transfer is gone).
  void complete(Transfer& t) {
    if (t.on_done) {
      std::unique_ptr<Transfer> owned(&t);
      auto done = std::move(t.on_done);
      done(std::move(t.resp));
      return;
    }
    std::lock_guard<std::mutex> lk(loop.mu);
    t.done = true;
    loop.done_cv.notify_all();
  }

  void stop_loop() {
    if (!loop.thread.joinable()) return;
    {
      std::lock_guard<std::mutex> lk(loop.mu);
      loop.quit = true;
    }
    lib().multi_wakeup(loop.session.multi);
    loop.thread.join();
    for (CURL* e : loop.session.idle) lib().easy_cleanup(e);
    lib().multi_cleanup(loop.session.multi);
  }

  std::vector<Response> run(const std::vector<const Request*>& reqs) {
    std::vector<Transfer> transfers(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) transfers[i].req = reqs[i];
    Session* s = acquire();
    std::deque<size_t> pending;
    for (size_t i = 0; i < reqs.size(); ++i) pending.push_back(i);
    size_t in_flight = 0;
    auto start_more = [&] {
      while (!pending.empty() && in_flight < options.max_in_flight) {
        Transfer& t = transfers[pending.front()];
        pending.pop_front();
        t.easy = s->take();
        setup(t);
        lib().multi_add_handle(s->multi, t.easy);
        t.in_flight = true;
        ++in_flight;
      }
    };
    start_more();
    while (in_flight > 0) {
      int running = 0;
      CURLMcode mc = lib().multi_perform(s->multi, &running);
      if (mc != CURLM_OK) break;
      int left = 0;
      while (CURLMsg* msg = lib().multi_info_read(s->multi, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Transfer* t = nullptr;
        lib().easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
        CURLcode code = msg->data.result;
        lib().multi_remove_handle(s->multi, msg->easy_handle);
        finish(*t, code);
        t->in_flight = false;
        s->idle.push_back(t->easy);
        --in_flight;
      }
      bool watched = false;  // some transfer in flight can be cancelled
      for (auto& t : transfers) {
        if (!t.in_flight || !t.req->cancelled) continue;
        if (!t.req->cancelled()) {
          watched = true;
          continue;
        }
        lib().multi_remove_handle(s->multi, t.easy);
        t.aborted = true;
        finish(t, CURLE_ABORTED_BY_CALLBACK);
        t.in_flight = false;
        s->idle.push_back(t.easy);
        --in_flight;
      }
      start_more();
      if (in_flight == 0) break;
      lib().multi_poll(s->multi, nullptr, 0, watched ? 100 : 1000, nullptr);
    }
    // Only reached with transfers left when the multi handle itself failed.
    for (auto& t : transfers) {
      if (t.in_flight) {
        lib().multi_remove_handle(s->multi, t.easy);
        t.resp.failure = TransportFailure::kOther;
        t.resp.failure_message = "internal transfer error";
        finish(t, CURLE_FAILED_INIT);
        s->idle.push_back(t.easy);
      }
    }
    release(s);
    std::vector<Response> out;
    out.reserve(transfers.size());
    for (auto& t : transfers) out.push_back(std::move(t.resp));
    return out;
  }
};

CurlTransport::CurlTransport(CurlOptions options) : impl_(std::make_unique<Impl>()) {
  global_init();
  impl_->options = std::move(options);
  impl_->share = lib().share_init();
  lib().share_setopt(impl_->share, CURLSHOPT_LOCKFUNC, &Impl::lock);
  lib().share_setopt(impl_->share, CURLSHOPT_UNLOCKFUNC, &Impl::unlock);
  lib().share_setopt(impl_->share, CURLSHOPT_USERDATA, impl_.get());
  lib().share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  lib().share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

CurlTransport::~CurlTransport() {
  impl_->stop_loop();
  for (Session* s : impl_->pool) {
    for (CURL* e : s->idle) lib().easy_cleanup(e);
    lib().multi_cleanup(s->multi);
    delete s;
  }
  lib().share_cleanup(impl_->share);
}

Response CurlTransport::perform(const Request& req) {
  // libcurl sends a header value as it is: a line break in it would start a header
  // (or a request) of its own.
  if (std::string why = request_problem(req); !why.empty()) return not_sent(why);
  return impl_->run_one(req);
}

void CurlTransport::start(Request req, std::function<void(Response)> done) {
  if (std::string why = request_problem(req); !why.empty()) {
    done(not_sent(why));
    return;
  }
  impl_->start_one(std::move(req), std::move(done));
}

std::vector<Response> CurlTransport::perform_all(const std::vector<Request>& reqs) {
  if (reqs.size() == 1) return {perform(reqs.front())};
  std::vector<Response> out(reqs.size());
  std::vector<const Request*> ptrs;
  std::vector<std::size_t> sent;  // the index in `reqs` of each of `ptrs`
  ptrs.reserve(reqs.size());
  sent.reserve(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (std::string why = request_problem(reqs[i]); !why.empty()) {
      out[i] = not_sent(why);
      continue;
    }
    ptrs.push_back(&reqs[i]);
    sent.push_back(i);
  }
  if (ptrs.empty()) return out;
  std::vector<Response> answers = impl_->run(ptrs);
  for (std::size_t k = 0; k < answers.size(); ++k) out[sent[k]] = std::move(answers[k]);
  return out;
}

}  // namespace ktrain::net
