#include "kube/client.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "base/json_error.h"
#include "base/json_field.h"
#include "base/text.h"

namespace ktrain::kube {

namespace {

std::string where(const ClientConfig& c) {
  if (c.in_cluster) return c.source;
  return "context '" + c.context_name + "' in " + c.source;
}

}  // namespace

ResourceType resource_type(std::string_view api_version, std::string_view kind) {
  static const std::map<std::string, ResourceType> known = [] {
    std::map<std::string, ResourceType> m;
    auto add = [&m](const char* av, const char* k, const char* plural, bool ns) {
      m[std::string(av) + "/" + k] = ResourceType{av, k, plural, ns};
    };
    add("v1", "Pod", "pods", true);
    add("v1", "Service", "services", true);
    add("v1", "Event", "events", true);
    add("v1", "ConfigMap", "configmaps", true);
    add("v1", "Secret", "secrets", true);
    add("v1", "Namespace", "namespaces", false);
    add("v1", "Node", "nodes", false);
    add("v1", "ServiceAccount", "serviceaccounts", true);
    add("v1", "PersistentVolumeClaim", "persistentvolumeclaims", true);
    add("batch/v1", "Job", "jobs", true);
    add("apps/v1", "Deployment", "deployments", true);
    add("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true);
    add("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true);
    add("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", true);
    add("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", true);
    add("networking.k8s.io/v1", "Ingress", "ingresses", true);
    add("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", true);
    add("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
    add("v1", "ResourceQuota", "resourcequotas", true);
    add("v1", "LimitRange", "limitranges", true);
    add("rbac.authorization.k8s.io/v1", "Role", "roles", true);
    add("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", true);
    add("kueue.x-k8s.io/v1beta1", "LocalQueue", "localqueues", true);
    return m;
  }();
  auto it = known.find(std::string(api_version) + "/" + std::string(kind));
  if (it != known.end()) return it->second;
  // kubectl's default RESTMapper guess for a kind it has not discovered.
  std::string plural = ascii_lower(kind);
  if (!plural.empty() && plural.back() == 's') {
    plural += "es";
  } else if (plural.size() > 1 && plural.back() == 'y' &&
             std::string("aeiou").find(plural[plural.size() - 2]) == std::string::npos) {
    plural = plural.substr(0, plural.size() - 1) + "ies";
  } else {
    plural += "s";
  }
  return ResourceType{std::string(api_version), std::string(kind), plural, true};
}

std::string collection_path(const ResourceType& type, const std::string& ns) {
  std::string p = type.api_version.find('/') == std::string::npos ? "/api/" + type.api_version
                                                                  : "/apis/" + type.api_version;
  if (type.namespaced && !ns.empty()) p += "/namespaces/" + ns;
  return p + "/" + type.plural;
}

std::string object_path(const ResourceType& type, const std::string& ns, const std::string& name,
                        const std::string& subresource) {
  std::string p = collection_path(type, ns) + "/" + name;
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

std::string object_ref(const ResourceType& type, const std::string& name) {
  auto slash = type.api_version.find('/');
  std::string k = ascii_lower(type.kind);
  if (slash != std::string::npos) k += "." + type.api_version.substr(0, slash);
  return k + "/" + name;
}

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

ApiError status_error(const ClientConfig& config, const net::Request& req,
                      const net::Response& resp) {
  std::string message, reason;
  std::vector<std::string> causes;
  try {
    auto j = nlohmann::json::parse(resp.body);
    if (j.is_object() && j.value("kind", "") == "Status") {
      message = j.value("message", "");
      reason = j.value("reason", "");
      if (auto d = j.find("details"); d != j.end() && d->is_object()) {
        if (auto cs = d->find("causes"); cs != d->end() && cs->is_array()) {
          for (const auto& c : *cs) {
            std::string field = c.value("field", "");
            std::string m = c.value("message", "");
            if (m.empty()) m = c.value("reason", "");
            causes.push_back(field.empty() ? m : field + ": " + m);
          }
        }
      }
    }
  } catch (const nlohmann::json::exception&) {
  }
  if (message.empty()) {
    message = resp.body.substr(0, 300);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
  }
  const std::string head = req.method + " " + net::redact_url(req.url) + ": " +
                           std::to_string(resp.status) + " " + net::reason_phrase(resp.status);
  std::string text;
  int exit_status = exit_code::kFailed;
  const UserInfo& u = config.user;
  const bool no_credentials = u.token.empty() && u.token_file.empty() &&
                              u.client_cert_file.empty() && u.client_cert_pem.empty() &&
                              u.username.empty() && !u.exec;
  if (resp.status == 401 && no_credentials) {
    exit_status = exit_code::kUnreachable;
    text = "the API server wants credentials, and user '" + config.user_name + "' in " +
           config.source + " has none (" + head + (message.empty() ? "" : ": " + message) +
           "); add a token, a client certificate or an exec plugin to that user";
  } else if (resp.status == 401) {
    exit_status = exit_code::kUnreachable;
    text = "the API server rejected the credentials of user '" + config.user_name + "' from " +
           config.source + " (" + head + (message.empty() ? "" : ": " + message) +
           "); log in again or refresh the credentials (an expired token or certificate is "
           "the usual cause)";
  } else if (resp.status == 403) {
    exit_status = exit_code::kUnreachable;
    text = head + (message.empty() ? "" : ": " + message) + " (user '" + config.user_name +
           "' of " + where(config) +
           " is not allowed to do this; ask a cluster admin for the RBAC permission)";
  } else {
    text = head + (message.empty() ? "" : ": " + message);
  }
  for (const auto& c : causes) {
    if (message.find(c) == std::string::npos) text += "\n  - " + c;
  }
  return ApiError(text, exit_status, resp.status, reason);
}

Error transport_error(const ClientConfig& config, const net::Request& req,
                      const net::Response& resp) {
  // The kubeconfig's server URL may carry user:password@ or a token in its query.
  const std::string server = net::redact_url(config.cluster.server);
  const std::string detail = resp.failure_message.empty() ? "" : " (" + resp.failure_message + ")";
  std::string text;
  switch (resp.failure) {
    case net::TransportFailure::kConnect:
      text = "cannot connect to the API server at " + server + " of " + where(config) +
             ": connection refused or unreachable; is the cluster running, and is this the "
             "right context?" +
             detail;
      break;
    case net::TransportFailure::kResolve:
      text = "cannot resolve the host name of the API server " + server + " of " + where(config) +
             detail;
      break;
    case net::TransportFailure::kTls:
      text = "TLS verification of the API server at " + server + " failed" + detail +
             ": its certificate is not signed by the certificate-authority of cluster '" +
             config.cluster_name + "' in " + config.source +
             ", or does not name this host (check certificate-authority and tls-server-name)";
      break;
    case net::TransportFailure::kTimeout:
      text = "the API server at " + server + " of " + where(config) + " did not answer in time" +
             detail;
      break;
    case net::TransportFailure::kDropped:
      text = "the connection to the API server at " + server +
             " closed before the answer was complete" + detail;
      break;
    default:
      text = net::describe_failure(resp, req.url);
      break;
  }
  return net::TransportError(req.method + " " + net::redact_url(req.url) + ": " + text,
                             resp.failure);
}

Client::Client(ClientConfig config, net::HttpTransport& transport, const Env& env,
               ProcessRunner& runner)
    : config_(std::move(config)), transport_(transport), env_(env) {
  credentials_ = std::make_unique<Credentials>(config_, env_, runner);
}

std::string Client::url(const std::string& path, const Query& query) const {
  std::string u = config_.cluster.server;
  while (!u.empty() && u.back() == '/') u.pop_back();
  u += path;
  char sep = '?';
  for (const auto& [k, v] : query) {
    u += sep;
    u += k + "=" + url_encode(v);
    sep = '&';
  }
  return u;
}

net::Request Client::request(const std::string& method, const std::string& path,
                             const Query& query) const {
  net::Request r;
  r.method = method;
  r.url = url(path, query);
  r.headers.emplace_back("Accept", "application/json");
  r.tls.ca_file = config_.cluster.ca_file;
  r.tls.ca_pem = config_.cluster.ca_pem;
  r.tls.insecure_skip_verify = config_.cluster.insecure_skip_tls_verify;
  r.tls.server_name = config_.cluster.tls_server_name;
  r.proxy = config_.cluster.proxy_url;
  r.timeout = std::chrono::milliseconds(60'000);
  return r;
}

net::Response Client::send(net::Request req) {
  auto resp = send_unchecked(req);
  if (resp.failure != net::TransportFailure::kNone &&
      resp.failure != net::TransportFailure::kAborted) {
    throw transport_error(config_, req, resp);
  }
  return resp;
}

std::vector<std::string> parse_warning_header(std::string_view v) {
  std::vector<std::string> out;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
  };
  auto token = [&] {
    const std::size_t b = i;
    while (i < v.size() && v[i] != ' ' && v[i] != '\t' && v[i] != ',' && v[i] != '"') ++i;
    return v.substr(b, i - b);
  };
  // A quoted string from v[i] == '"'; nullopt when it does not end.
  auto quoted = [&]() -> std::optional<std::string> {
    std::string text;
    for (++i; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) {
        text += v[++i];
      } else if (v[i] == '"') {
        ++i;
        return text;
      } else {
        text += v[i];
      }
    }
    return std::nullopt;
  };
  while (i < v.size()) {
    skip_space();
    const std::string_view code = token();
    skip_space();
    const std::string_view agent = token();
    skip_space();
    if (code.empty() || agent.empty() || i >= v.size() || v[i] != '"') break;
    auto text = quoted();
    if (!text) break;
    skip_space();
    if (i < v.size() && v[i] == '"') {  // a warn-date
      if (!quoted()) break;
      skip_space();
    }
    if (code == "299" && !text->empty()) out.push_back(std::move(*text));
    if (i < v.size() && v[i] != ',') break;
    ++i;  // the comma
  }
  return out;
}

void Client::show_warnings(const net::Response& resp) {
  for (const auto& [name, value] : resp.headers) {
    if (!net::iequals(name, "Warning")) continue;
    for (auto& text : parse_warning_header(value)) {
      std::lock_guard<std::mutex> lock(warned_mu_);
      if (warned_.insert(text).second) env_.warn("the API server warns: " + text);
    }
  }
}

net::Response Client::send_unchecked(net::Request req) {
  net::Request with_auth = req;
  credentials_->apply(with_auth);
  auto resp = transport_.perform(with_auth);
  if (resp.failure == net::TransportFailure::kNone && resp.status == 401 &&
      credentials_->invalidate()) {
    with_auth = req;
    credentials_->apply(with_auth);
    resp = transport_.perform(with_auth);
  }
  show_warnings(resp);
  return resp;
}

void Client::start_unchecked(net::Request req, std::function<void(net::Response)> done) {
  credentials_->apply(req);
  transport_.start(std::move(req), std::move(done));
}

bool Client::renew_credentials() {
  return credentials_->invalidate();
}

std::unique_ptr<net::WebSocket> Client::open_stream(const std::string& path, const Query& query,
                                                    const std::vector<std::string>& protocols) {
  net::Request req = request("GET", path, query);
  req.headers.clear();  // the upgrade answers with frames, not JSON
  for (int attempt = 0;; ++attempt) {
    net::Request with_auth = req;
    credentials_->apply(with_auth);
    try {
      return net::WebSocket::open(with_auth, protocols);
    } catch (const net::UpgradeRefused& e) {
      if (e.status() == 401 && attempt == 0 && renew_credentials()) continue;
      net::Response resp;
      resp.status = e.status();
      resp.body = e.body();
      check(req, resp);
      throw;  // a 1xx/2xx/3xx answer that is not the upgrade
    } catch (const net::TransportError& e) {
      throw Error(std::string(e.what()), e.exit_status());
    }
  }
}

std::vector<net::Response> Client::send_all(std::vector<net::Request> reqs) {
  std::vector<net::Request> with_auth = reqs;
  for (auto& r : with_auth) credentials_->apply(r);
  auto resps = transport_.perform_all(with_auth);
  std::vector<size_t> again;
  for (size_t i = 0; i < resps.size(); ++i) {
    if (resps[i].failure == net::TransportFailure::kNone && resps[i].status == 401) {
      again.push_back(i);
    }
  }
  if (!again.empty() && credentials_->invalidate()) {
    std::vector<net::Request> retry;
    for (size_t i : again) {
      retry.push_back(reqs[i]);
      credentials_->apply(retry.back());
    }
    auto second = transport_.perform_all(retry);
    for (size_t k = 0; k < again.size(); ++k) resps[again[k]] = std::move(second[k]);
  }
  for (const auto& r : resps) show_warnings(r);
  return resps;
}

void Client::check(const net::Request& req, const net::Response& resp) const {
  if (resp.failure != net::TransportFailure::kNone) throw transport_error(config_, req, resp);
  if (resp.status < 200 || resp.status >= 300) throw status_error(config_, req, resp);
}

namespace {

nlohmann::json parse_body(const net::Request& req, const net::Response& resp) {
  try {
    return nlohmann::json::parse(resp.body);
  } catch (const nlohmann::json::exception& e) {
    throw Error(req.method + " " + net::redact_url(req.url) +
                ": the API server answered with something that is not JSON (" + json_error_text(e) +
                ")");
  }
}

}  // namespace

nlohmann::json Client::get(const std::string& path, const Query& query) {
  auto req = request("GET", path, query);
  auto resp = send(req);
  check(req, resp);
  return parse_body(req, resp);
}

std::optional<nlohmann::json> Client::get_if_exists(const std::string& path, const Query& query) {
  auto req = request("GET", path, query);
  auto resp = send(req);
  if (resp.status == 404) return std::nullopt;
  check(req, resp);
  return parse_body(req, resp);
}

std::string Client::get_text(const std::string& path, const Query& query) {
  auto req = request("GET", path, query);
  req.headers = {{"Accept", "*/*"}};
  auto resp = send(req);
  check(req, resp);
  return std::move(resp.body);
}

std::string Client::list(const std::string& path, const ListOptions& opts,
                         const std::function<void(nlohmann::json& item)>& each) {
  std::string cont;
  std::string resource_version;
  int limit = opts.limit;
  for (;;) {
    Query q;
    if (!opts.label_selector.empty()) q.emplace_back("labelSelector", opts.label_selector);
    if (!opts.field_selector.empty()) q.emplace_back("fieldSelector", opts.field_selector);
    if (limit > 0) q.emplace_back("limit", std::to_string(limit));
    if (!cont.empty()) q.emplace_back("continue", cont);
    auto req = request("GET", path, q);
    // A page is kept whole while it is parsed: a bound far below the 256 MiB of an
    // answer read whole keeps the process small whatever a server sends. A page of
    // objects that large (an object may hold 1.5 MiB) is asked for again in fewer items.
    if (limit > 0) req.max_body_bytes = std::min(req.max_body_bytes, kMaxPageBytes);
    auto resp = send_unchecked(req);
    if (resp.failure == net::TransportFailure::kTooLarge && limit > kMinPageItems) {
      limit = std::max(kMinPageItems, limit / 5);
      resp = {};
      continue;
    }
    if (resp.failure != net::TransportFailure::kNone) throw transport_error(config_, req, resp);
    if (resp.status == 410 && !cont.empty()) {
      throw Error(req.method + " " + net::redact_url(req.url) +
                  ": 410 Gone: the list changed too much while it was being read page by "
                  "page; run the command again");
    }
    check(req, resp);
    nlohmann::json page;
    if (opts.drop_keys.empty()) {
      page = parse_body(req, resp);
    } else {
      const auto& drop = opts.drop_keys;
      // The list's own keys (kind, apiVersion, metadata, items) are never in drop_keys.
      auto keep = [&drop](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event != nlohmann::json::parse_event_t::key) return true;
        const auto& k = parsed.get_ref<const std::string&>();
        return std::find(drop.begin(), drop.end(), k) == drop.end();
      };
      try {
        page = nlohmann::json::parse(resp.body, keep);
      } catch (const nlohmann::json::exception& e) {
        throw Error(req.method + " " + net::redact_url(req.url) +
                    ": the API server answered with something that is not JSON (" +
                    json_error_text(e) + ")");
      }
    }
    resp.body.clear();
    resp.body.shrink_to_fit();
    if (auto items = page.find("items"); items != page.end() && items->is_array()) {
      for (auto& item : *items) each(item);
    }
    cont.clear();
    if (auto md = page.find("metadata"); md != page.end() && md->is_object()) {
      cont = string_field(*md, "continue");
      resource_version = string_field(*md, "resourceVersion");
    }
    if (cont.empty()) break;
  }
  return resource_version;
}

RequestSpec Client::apply_spec(const nlohmann::ordered_json& obj, const std::string& ns,
                               const ApplyOptions& opts) const {
  const std::string api_version = obj.value("apiVersion", "");
  const std::string kind = obj.value("kind", "");
  std::string name;
  std::string obj_ns;
  if (auto md = obj.find("metadata"); md != obj.end() && md->is_object()) {
    name = md->value("name", "");
    obj_ns = md->value("namespace", "");
  }
  if (api_version.empty() || kind.empty() || name.empty()) {
    throw Error("cannot apply an object without apiVersion, kind and metadata.name");
  }
  const auto type = resource_type(api_version, kind);
  const std::string target_ns = obj_ns.empty() ? ns : obj_ns;
  RequestSpec spec;
  spec.method = "PATCH";
  spec.path = object_path(type, type.namespaced ? target_ns : "", name);
  spec.query = {{"fieldManager", opts.field_manager}};
  if (opts.force) spec.query.emplace_back("force", "true");
  if (opts.dry_run) spec.query.emplace_back("dryRun", "All");
  spec.content_type = "application/apply-patch+yaml";
  if (type.namespaced && obj_ns.empty() && !target_ns.empty()) {
    auto copy = obj;
    copy["metadata"]["namespace"] = target_ns;
    spec.body = copy.dump();
  } else {
    spec.body = obj.dump();
  }
  spec.idempotent = true;  // applying the same object twice is the same as once
  return spec;
}

net::Request Client::to_request(RequestSpec&& spec) const {
  auto req = request(spec.method, spec.path, spec.query);
  if (!spec.accept.empty()) {
    for (auto& [name, value] : req.headers) {
      if (name == "Accept") value = std::move(spec.accept);
    }
  }
  if (!spec.content_type.empty()) req.headers.emplace_back("Content-Type", spec.content_type);
  req.body = std::move(spec.body);
  req.idempotent = spec.idempotent;
  return req;
}

nlohmann::json Client::apply(const nlohmann::ordered_json& obj, const std::string& ns,
                             const ApplyOptions& opts) {
  auto req = to_request(apply_spec(obj, ns, opts));
  auto resp = send(req);
  check(req, resp);
  return parse_body(req, resp);
}

std::optional<nlohmann::json> Client::create(const std::string& path, const nlohmann::json& body,
                                             bool dry_run) {
  Query q{{"fieldManager", "ktrain"}};
  if (dry_run) q.emplace_back("dryRun", "All");
  auto req = request("POST", path, q);
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = body.dump();
  // Repeating a create is harmless: a second one answers 409, which means "done".
  req.idempotent = true;
  auto resp = send(req);
  if (resp.status == 409) return std::nullopt;
  check(req, resp);
  return parse_body(req, resp);
}

nlohmann::json Client::merge_patch(const std::string& path, const nlohmann::json& patch) {
  auto req = request("PATCH", path, {{"fieldManager", "ktrain"}});
  req.headers.emplace_back("Content-Type", "application/merge-patch+json");
  req.body = patch.dump();
  auto resp = send(req);
  check(req, resp);
  return parse_body(req, resp);
}

net::Request Client::delete_request(const std::string& path) const {
  auto req = request("DELETE", path);
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})";
  return req;
}

bool Client::remove(const std::string& path) {
  auto req = delete_request(path);
  auto resp = send(req);
  if (resp.status == 404) return false;
  check(req, resp);
  return true;
}

void Client::stream_lines(const std::string& path, const Query& query,
                          const std::function<bool(std::string_view line)>& on_line) {
  auto req = request("GET", path, query);
  req.headers = {{"Accept", "*/*"}};
  req.timeout = std::chrono::milliseconds(0);
  std::string partial;
  bool stopped = false;
  int status = 0;
  req.on_headers = [&status](int s, const net::Headers&) { status = s; };
  req.on_data = [&](std::string_view data) {
    if (status != 0 && (status < 200 || status >= 300)) {
      partial.append(data);  // an error body: kept whole for the message
      return true;
    }
    partial.append(data);
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (!on_line(std::string_view(partial).substr(start, nl - start))) {
        stopped = true;
        return false;
      }
    }
    partial.erase(0, start);
    return true;
  };
  auto resp = send(req);
  if (stopped) return;
  if (resp.status < 200 || resp.status >= 300) {
    resp.body = partial;
    check(req, resp);
  }
  if (!partial.empty()) on_line(partial);
}

}  // namespace ktrain::kube
