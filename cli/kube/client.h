#pragma once
// A small Kubernetes REST client on net::HttpTransport: resource paths, get, paged
// list, server-side apply, create, merge patch, delete, and line streams (logs,
// watch). Errors come back as ApiError with the server's metav1.Status words, or
// plain-language messages for connectivity and credential problems (exit status 3).

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/error.h"
#include "kube/auth.h"
#include "kube/kubeconfig.h"
#include "kube/process.h"
#include "net/http.h"
#include "net/websocket.h"

namespace ktrain::kube {

/// The REST coordinates of a kind.
struct ResourceType {
  std::string api_version;  ///< "v1", "batch/v1"
  std::string kind;         ///< "Job"
  std::string plural;       ///< "jobs"
  bool namespaced = true;
};

/// The resource type of a kind ktrain uses (Pod, Service, Event, ConfigMap, Secret,
/// Namespace, Job, Deployment, HorizontalPodAutoscaler, PodGroup, ...); for another kind,
/// a namespaced type with the plural guessed as kubectl's RESTMapper does.
ResourceType resource_type(std::string_view api_version, std::string_view kind);

/// "/api/v1/namespaces/NS/pods" or "/apis/batch/v1/namespaces/NS/jobs"; with `ns` empty,
/// the list across all namespaces ("/apis/batch/v1/jobs").
std::string collection_path(const ResourceType& type, const std::string& ns);

/// The path of one object, optionally of its subresource ("scale", "log", "status").
std::string object_path(const ResourceType& type, const std::string& ns, const std::string& name,
                        const std::string& subresource = "");

/// "job.batch/NAME", "service/NAME": how kubectl names an object in `-o name`.
std::string object_ref(const ResourceType& type, const std::string& name);

/// Query parameters, in order; values are percent-encoded when the URL is built.
using Query = std::vector<std::pair<std::string, std::string>>;

/// Percent-encodes `s` for a query value (unreserved characters are kept).
std::string url_encode(std::string_view s);

/// An answer from the API server other than 2xx.
class ApiError : public Error {
 public:
  ApiError(const std::string& message, int exit_status, int http_status, std::string reason)
      : Error(message, exit_status), http_status_(http_status), reason_(std::move(reason)) {}
  /// The HTTP status (404, 409, 422, ...).
  int http_status() const { return http_status_; }
  /// metav1.Status reason (NotFound, AlreadyExists, Invalid, Forbidden, ...), or "".
  const std::string& reason() const { return reason_; }

 private:
  int http_status_;
  std::string reason_;
};

/// The most bytes of one page of a paged list that are read (a page is kept whole while
/// it is parsed); a page past it is asked for again in fewer items, down to
/// kMinPageItems, then fails.
inline constexpr std::size_t kMaxPageBytes = std::size_t{64} << 20;
inline constexpr int kMinPageItems = 10;

/// Options of a paged list.
struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int limit = 500;  ///< items per page (0 = all at once)
  /// Object keys whose values are dropped while a page is parsed (e.g. "managedFields"),
  /// so that big lists stay small in memory.
  std::vector<std::string> drop_keys;
};

/// Options of server-side apply.
struct ApplyOptions {
  std::string field_manager = "ktrain";
  bool force = true;
  bool dry_run = false;  ///< dryRun=All: validated and defaulted, not persisted
};

/// What a request sends, without the request around it (no credentials or TLS
/// settings): thousands of them stay small until they are sent.
struct RequestSpec {
  std::string method;
  std::string path;
  Query query;
  std::string content_type;
  std::string body;
  bool idempotent = false;
  /// The Accept header ("" = application/json); see kAcceptMetadataOnly.
  std::string accept;
};

/// An Accept header that asks for an answer with the object's metadata only (a
/// meta.k8s.io/v1 PartialObjectMetadata; the API server honours it for get, create,
/// update and patch), with plain JSON as the fallback: for requests whose answer
/// is only checked, not read.
inline constexpr const char* kAcceptMetadataOnly =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Talks to one API server as one user. Safe to use from several threads for requests;
/// the credentials are shared.
class Client {
 public:
  /// `transport` (usually retrying and logging decorators around CurlTransport), `env` and
  /// `runner` must outlive the client. Throws Error for credentials that cannot be used.
  Client(ClientConfig config, net::HttpTransport& transport, const Env& env, ProcessRunner& runner);
  Client(const Client&) = delete;  ///< the credentials refer to this object's config
  Client& operator=(const Client&) = delete;

  /// The resolved config (server, user, namespace).
  const ClientConfig& config() const { return config_; }
  /// The namespace to use: -n, else the context's, else "default".
  const std::string& default_namespace() const { return config_.namespace_; }

  /// A request for `path` (with `query`) carrying the cluster's TLS settings, proxy and
  /// timeouts (credentials are added when sent).
  net::Request request(const std::string& method, const std::string& path,
                       const Query& query = {}) const;

  /// Sends `req` with credentials; after a 401, refreshes exec/token-file credentials and
  /// sends it once more. Throws Error (exit 3) for failures below HTTP; any HTTP status
  /// comes back.
  net::Response send(net::Request req);

  /// As `send`, but a failure below HTTP comes back in the response instead of being
  /// thrown (for streams that reconnect by themselves).
  net::Response send_unchecked(net::Request req);

  /// As `send_unchecked`, but returns at once: `done` gets the answer on the
  /// transport's thread (net::HttpTransport::start), and must not block. No second try
  /// after a 401 (that would run a credential plugin on the transport's thread): the
  /// caller calls renew_credentials and starts again. For followed logs, so that
  /// hundreds of them need no thread each.
  void start_unchecked(net::Request req, std::function<void(net::Response)> done);

  /// After a 401: drops the credentials got from an exec plugin or token file, so that
  /// the next request gets fresh ones; false when there is nothing to renew.
  bool renew_credentials();

  /// Sends all `reqs` concurrently, each as `send` would; responses in order. Failures
  /// below HTTP come back in the responses (check them with `check`).
  std::vector<net::Response> send_all(std::vector<net::Request> reqs);

  /// Throws the error that `resp` stands for (below HTTP, or a non-2xx status).
  void check(const net::Request& req, const net::Response& resp) const;

  /// GET `path` as JSON; throws ApiError for a non-2xx answer.
  nlohmann::json get(const std::string& path, const Query& query = {});

  /// GET `path` as JSON; nullopt on 404.
  std::optional<nlohmann::json> get_if_exists(const std::string& path, const Query& query = {});

  /// GET `path` as text (pod logs).
  std::string get_text(const std::string& path, const Query& query = {});

  /// Lists the collection at `path` page by page (limit/continue) and calls `each` with
  /// every item; only one page is held in memory at a time. `each` may move from the item.
  /// Returns the list's resourceVersion (of the last page).
  std::string list(const std::string& path, const ListOptions& opts,
                   const std::function<void(nlohmann::json& item)>& each);

  /// The server-side apply of `obj` as a RequestSpec (PATCH application/apply-patch+yaml
  /// with fieldManager and force; marked idempotent; to_request makes the request).
  /// `ns` fills a missing metadata.namespace.
  RequestSpec apply_spec(const nlohmann::ordered_json& obj, const std::string& ns,
                         const ApplyOptions& opts = {}) const;
  /// The request of `spec`, for this API server (moves the body out of `spec`).
  net::Request to_request(RequestSpec&& spec) const;

  /// Applies `obj` (server-side apply) and returns the object the server answers with.
  nlohmann::json apply(const nlohmann::ordered_json& obj, const std::string& ns,
                       const ApplyOptions& opts = {});

  /// POSTs `body` to the collection `path`; nullopt when it already exists (409).
  std::optional<nlohmann::json> create(const std::string& path, const nlohmann::json& body,
                                       bool dry_run = false);

  /// PATCHes `path` with an RFC 7386 merge patch.
  nlohmann::json merge_patch(const std::string& path, const nlohmann::json& patch);

  /// The DELETE request of `path` with background propagation.
  net::Request delete_request(const std::string& path) const;

  /// Deletes `path` (background propagation); false when it did not exist.
  bool remove(const std::string& path);

  /// Opens a WebSocket to `path` (a pod's exec or portforward) with the cluster's TLS
  /// settings and the user's credentials, offering `protocols`; after a 401, renews
  /// exec/token-file credentials and asks once more. Throws Error (exit 3) below HTTP
  /// and ApiError, with the server's words, for any answer but the upgrade.
  std::unique_ptr<net::WebSocket> open_stream(const std::string& path, const Query& query,
                                              const std::vector<std::string>& protocols);

  /// GETs `path` and hands every complete line (without "\n") to `on_line` as it arrives,
  /// until the stream ends or `on_line` returns false. For followed logs and watches.
  void stream_lines(const std::string& path, const Query& query,
                    const std::function<bool(std::string_view line)>& on_line);

 private:
  std::string url(const std::string& path, const Query& query) const;
  /// Prints the API server's warnings in `resp` (its Warning headers: a deprecated API,
  /// a PodSecurity level the pods would violate), each text once per process, as
  /// kubectl does.
  void show_warnings(const net::Response& resp);

  ClientConfig config_;
  net::HttpTransport& transport_;
  const Env& env_;
  std::unique_ptr<Credentials> credentials_;
  std::mutex warned_mu_;
  std::set<std::string> warned_;
};

/// The texts of a Warning header's value: `299 - "text"` warnings (RFC 7234, the
/// form the API server sends), several separated by commas, a date after a text
/// allowed; quoted-pair escapes undone. Other codes, and what does not parse, are left out.
std::vector<std::string> parse_warning_header(std::string_view value);

/// The Error for a non-2xx response, decoded from its metav1.Status body: the method and
/// URL, the status, the server's message and causes. 401 and 403 get plain words naming
/// the user and kubeconfig (exit 3); other statuses exit 1.
ApiError status_error(const ClientConfig& config, const net::Request& req,
                      const net::Response& resp);

/// The Error for a failure below HTTP, in plain words naming the API server, the
/// context and the kubeconfig (exit 3).
Error transport_error(const ClientConfig& config, const net::Request& req,
                      const net::Response& resp);

}  // namespace ktrain::kube
