#include "oci/registry.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_error.h"
#include "base/json_field.h"
#include "base/text.h"
#include "oci/digest.h"
#include "oci/image.h"

namespace ktrain::oci {

namespace {

const char kManifestAccept[] =
    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

std::string url_escape(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string host_only(const std::string& hostport) {
  if (!hostport.empty() && hostport[0] == '[') return hostport.substr(0, hostport.find(']') + 1);
  return hostport.substr(0, hostport.find(':'));
}

/// The registry's error text from an OCI error body ({"errors":[{"code","message"}]}).
std::string registry_message(const net::Response& resp) {
  try {
    auto j = nlohmann::json::parse(resp.body);
    std::string out;
    for (const auto& e : j.at("errors")) {
      if (!out.empty()) out += "; ";
      out += string_field(e, "code");
      std::string m = string_field(e, "message");
      if (!m.empty()) out += (out.empty() ? "" : ": ") + m;
    }
    return out;
  } catch (const std::exception&) {
    std::string b = resp.body.substr(0, 200);
    while (!b.empty() && std::isspace(static_cast<unsigned char>(b.back()))) b.pop_back();
    return b;
  }
}

std::string status_text(int s) {
  switch (s) {
    case 401:
      return "401 Unauthorized";
    case 403:
      return "403 Forbidden";
    case 404:
      return "404 Not Found";
    default:
      return std::to_string(s);
  }
}

/// Resolves a Location header against the registry's base URL.
std::string absolute(const std::string& base, const std::string& location) {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return location;
  return base + (location.empty() || location[0] != '/' ? "/" : "") + location;
}

std::string with_query(const std::string& url, const std::string& q) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + q;
}

bool platform_matches(const nlohmann::json& p, const std::string& want) {
  std::vector<std::string> parts;
  size_t s = 0;
  while (true) {
    size_t e = want.find('/', s);
    parts.push_back(want.substr(s, e == std::string::npos ? std::string::npos : e - s));
    if (e == std::string::npos) break;
    s = e + 1;
  }
  if (parts.size() < 2) return false;
  if (string_field(p, "os") != parts[0] || string_field(p, "architecture") != parts[1]) {
    return false;
  }
  if (parts.size() >= 3 && string_field(p, "variant") != parts[2]) return false;
  return true;
}

}  // namespace

std::string api_host(const std::string& registry) {
  if (registry == "docker.io" || registry == "index.docker.io") return "registry-1.docker.io";
  return registry;
}

std::pair<std::string, std::map<std::string, std::string>> parse_challenge(const std::string& h) {
  std::map<std::string, std::string> params;
  size_t sp = h.find(' ');
  std::string scheme = ascii_lower(h.substr(0, sp));
  if (sp == std::string::npos) return {scheme, params};
  size_t i = sp + 1;
  while (i < h.size()) {
    while (i < h.size() && (h[i] == ' ' || h[i] == ',')) ++i;
    size_t eq = h.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = ascii_lower(h.substr(i, eq - i));
    i = eq + 1;
    std::string value;
    if (i < h.size() && h[i] == '"') {
      ++i;
      while (i < h.size() && h[i] != '"') {
        if (h[i] == '\\' && i + 1 < h.size()) ++i;
        value += h[i++];
      }
      ++i;
    } else {
      size_t end = h.find(',', i);
      value = h.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? h.size() : end;
    }
    params[key] = value;
  }
  return {scheme, params};
}

RegistryClient::RegistryClient(net::HttpTransport& transport, CredentialStore& creds,
                               RegistryOptions options)
    : transport_(transport), creds_(creds), options_(std::move(options)) {}

std::string RegistryClient::base_url(const std::string& registry) const {
  const std::string host = api_host(registry);
  const std::string h = host_only(host);
  bool plain = h == "localhost" || h == "127.0.0.1" || h == "[::1]";
  for (const auto& i : options_.insecure_hosts) plain = plain || i == host || i == h;
  return (plain ? "http://" : "https://") + host;
}

Credentials RegistryClient::credentials_for(const std::string& registry) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = creds_cache_.find(registry);
    if (it != creds_cache_.end()) return it->second;
  }
  Credentials c = creds_.lookup(registry);
  std::lock_guard<std::mutex> g(mutex_);
  creds_cache_[registry] = c;
  return c;
}

std::string RegistryClient::authorize(const std::string& challenge, const Repo& repo, bool push,
                                      const std::vector<std::string>& extra_scopes,
                                      const Credentials& creds) {
  auto [scheme, params] = parse_challenge(challenge);
  if (scheme == "basic") {
    if (creds.anonymous()) return "";
    return "Basic " + base64_encode(creds.username + ":" + creds.password);
  }
  if (scheme != "bearer" || params["realm"].empty()) return "";
  std::string url = params["realm"];
  const std::string realm_scheme = ascii_lower(url.substr(0, url.find("://")));
  if (url.find("://") == std::string::npos || (realm_scheme != "https" && realm_scheme != "http")) {
    throw Error("the registry " + repo.registry + " names a token service at " +
                    net::redact_url(url) + ", which is not an http(s) URL",
                exit_code::kUnreachable);
  }
  // Credentials go to a token service over HTTPS only, unless the registry itself is
  // spoken to in plain HTTP (localhost, or --insecure-registry).
  if (realm_scheme != "https" && !creds.anonymous() &&
      base_url(repo.registry).rfind("http://", 0) != 0) {
    throw Error("not sending the credentials from " + creds.source + " for " + repo.registry +
                    " to the token service at " + net::redact_url(url) +
                    ": it is plain HTTP, not HTTPS (--insecure-registry " + repo.registry +
                    " allows it)",
                exit_code::kUnreachable);
  }
  std::vector<std::string> q;
  if (!params["service"].empty()) q.push_back("service=" + url_escape(params["service"]));
  q.push_back("scope=" +
              url_escape("repository:" + repo.repository + (push ? ":pull,push" : ":pull")));
  for (const auto& s : extra_scopes) q.push_back("scope=" + url_escape(s));
  net::Request tr;
  if (!creds.identity_token.empty()) {
    // OAuth2 refresh-token grant, as docker login with an identity token does.
    tr.method = "POST";
    tr.url = url;
    tr.idempotent = true;
    tr.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    tr.body = "grant_type=refresh_token&client_id=ktrain&refresh_token=" +
              url_escape(creds.identity_token);
    for (const auto& p : q) tr.body += "&" + p;
  } else {
    for (size_t i = 0; i < q.size(); ++i)
      url += (i == 0 && url.find('?') == std::string::npos ? "?" : "&") + q[i];
    tr.url = url;
    if (!creds.anonymous()) {
      tr.headers = {
          {"Authorization", "Basic " + base64_encode(creds.username + ":" + creds.password)}};
    }
  }
  tr.max_body_bytes = std::size_t{1} << 20;  // a token answer is a few KiB
  net::Response r = transport_.perform(tr);
  net::throw_if_failed(r, tr.url);
  const std::string realm = net::redact_url(params["realm"]);
  if (r.status == 401 || r.status == 403) {
    throw Error("getting a token from " + realm + " for " + repo.str() + ": " +
                    status_text(r.status) + ": the token service refused the credentials from " +
                    creds.source +
                    (creds.username.empty() ? "" : " (user '" + creds.username + "')"),
                exit_code::kUnreachable);
  }
  if (!r.ok()) {
    throw Error("getting a token from " + realm + ": " + std::to_string(r.status),
                exit_code::kUnreachable);
  }
  // What is wrong with the answer is said without quoting it: it holds the token.
  std::string token;
  try {
    auto j = nlohmann::json::parse(r.body);
    if (!j.is_object()) throw Error("the answer is not a JSON object");
    for (const char* key : {"token", "access_token"}) {
      auto it = j.find(key);
      if (token.empty() && it != j.end() && it->is_string()) token = it->get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        "getting a token from " + realm + ": the answer is not valid JSON: " + json_error_text(e),
        exit_code::kUnreachable);
  } catch (const Error& e) {
    throw Error("getting a token from " + realm + ": " + e.what(), exit_code::kUnreachable);
  }
  if (token.empty()) {
    throw Error("getting a token from " + realm + ": no token in the answer (no \"token\" or " +
                    "\"access_token\" string)",
                exit_code::kUnreachable);
  }
  if (token.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    throw Error("getting a token from " + realm +
                    ": the token in the answer holds a line break (CR or LF) or NUL, which "
                    "cannot go in an HTTP header",
                exit_code::kUnreachable);
  }
  return "Bearer " + token;
}

net::Response RegistryClient::send(net::Request req, const Repo& repo, bool push,
                                   const std::vector<std::string>& extra_scopes) {
  const std::string key = repo.registry + "|" + repo.repository + (push ? "|push" : "|pull");
  std::string auth;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = auth_header_.find(key);
    if (it != auth_header_.end()) auth = it->second;
  }
  net::Request first = req;
  if (!auth.empty()) first.headers.emplace_back("Authorization", auth);
  net::Response r = transport_.perform(first);
  if (r.status != 401) return r;
  auto challenge = r.header("WWW-Authenticate");
  if (!challenge) return r;
  Credentials creds = credentials_for(repo.registry);
  auth = authorize(*challenge, repo, push, extra_scopes, creds);
  if (auth.empty()) return r;
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (extra_scopes.empty()) auth_header_[key] = auth;
  }
  req.headers.emplace_back("Authorization", auth);
  return transport_.perform(req);
}

void RegistryClient::fail(const std::string& doing, const net::Request& req,
                          const net::Response& resp, const Repo& repo) {
  if (resp.failure != net::TransportFailure::kNone && resp.status == 0) {
    throw net::TransportError(doing + ": " + req.method + " " + net::redact_url(req.url) + ": " +
                                  net::describe_failure(resp, req.url),
                              resp.failure);
  }
  if (resp.failure != net::TransportFailure::kNone) {
    throw net::TransportError(doing + ": " + net::describe_failure(resp, req.url), resp.failure);
  }
  std::string msg =
      doing + ": " + req.method + " " + net::redact_url(req.url) + ": " + status_text(resp.status);
  std::string reg = registry_message(resp);
  if (!reg.empty()) msg += ": " + reg;
  if (resp.status == 401 || resp.status == 403) {
    Credentials c = credentials_for(repo.registry);
    msg += c.anonymous() ? " (no credentials were sent: " + c.source + "; run 'docker login " +
                               repo.registry + "')"
                         : " (credentials from " + c.source +
                               (c.username.empty() ? "" : ", user '" + c.username + "'") + ")";
    throw Error(msg, exit_code::kUnreachable);
  }
  throw Error(msg);
}

ManifestBytes RegistryClient::get_manifest(const ImageRef& ref, const std::string& platform) {
  Repo repo{ref.registry, ref.repository};
  const std::string base = base_url(ref.registry);
  const std::string doing = "pulling the manifest of " + ref.str();
  // What the next manifest must be: its digest ("" when it is fetched by tag) and its
  // size (-1 when unknown), and who named it.
  std::string want;
  std::int64_t want_size = -1;
  std::string named_by;
  if (!ref.digest.empty()) {
    want = checked_digest(ref.digest, doing, exit_code::kUsage);
    named_by = "the reference";
  }
  std::string reference = want.empty() ? (ref.tag.empty() ? "latest" : ref.tag) : want;
  for (int depth = 0; depth < 2; ++depth) {
    net::Request req;
    req.url = base + "/v2/" + ref.repository + "/manifests/" + reference;
    req.headers = {{"Accept", kManifestAccept}};
    req.max_body_bytes = kMaxManifestBytes;
    net::Response r = send(req, repo, false);
    if (r.status == 404) {
      throw Error(doing + ": the image does not exist in " + ref.registry + " (" +
                  registry_message(r) + "); check image.build.base");
    }
    if (!r.ok()) fail(doing, req, r, repo);
    ManifestBytes m;
    m.bytes = r.body;
    m.digest = sha256_digest(r.body);
    // A manifest's digest is the sha256 of the exact bytes received.
    if (!want.empty() && m.digest != want) {
      throw Error(doing + ": the registry sent a manifest whose digest is " + m.digest + ", not " +
                  want + " (which " + named_by + " names)");
    }
    if (want_size >= 0 && m.bytes.size() != static_cast<std::uint64_t>(want_size)) {
      throw Error(doing + ": the manifest " + want + " is " + std::to_string(m.bytes.size()) +
                  " bytes, not the " + std::to_string(want_size) + " that " + named_by + " gives");
    }
    m.media_type = r.header("Content-Type").value_or("");
    if (auto semi = m.media_type.find(';'); semi != std::string::npos) m.media_type.resize(semi);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(m.bytes);
    } catch (const nlohmann::json::exception&) {
      throw Error(doing + ": the registry returned a manifest that is not JSON");
    }
    if (j.contains("mediaType") && j["mediaType"].is_string()) m.media_type = j["mediaType"];
    const bool is_index = m.media_type == media::kOciIndex || m.media_type == media::kDockerList ||
                          (j.contains("manifests") && !j.contains("layers"));
    if (!is_index) {
      const auto version = j.find("schemaVersion");  // end() when j is not an object
      if (version == j.end() || *version != 2 || !j.contains("config")) {
        throw Error(doing + ": unsupported manifest type '" + m.media_type +
                    "' (expected OCI or Docker schema 2)");
      }
      return m;
    }
    const nlohmann::json* chosen = nullptr;
    std::vector<std::string> offered;
    const nlohmann::json manifests =
        j.contains("manifests") ? j["manifests"] : nlohmann::json::array();
    for (const auto& d : manifests) {
      if (!d.is_object() || !d.contains("platform") || !d["platform"].is_object()) continue;
      const auto& p = d["platform"];
      offered.push_back(string_field(p, "os", "?") + "/" + string_field(p, "architecture", "?") +
                        (p.contains("variant") ? "/" + string_field(p, "variant") : ""));
      if (!chosen && platform_matches(p, platform)) chosen = &d;
    }
    if (!chosen) {
      std::string list;
      for (const auto& o : offered) list += (list.empty() ? "" : ", ") + o;
      throw Error(doing + ": no manifest for platform " + platform + " (the image has: " + list +
                      "); use --platform",
                  exit_code::kUsage);
    }
    named_by = "the index's entry for " + platform;
    const auto digest = chosen->find("digest");
    want = checked_digest(
        digest != chosen->end() && digest->is_string() ? digest->get<std::string>() : std::string(),
        doing + ": " + named_by);
    const auto size = chosen->find("size");
    want_size =
        size != chosen->end() && size->is_number_unsigned() ? size->get<std::int64_t>() : -1;
    reference = want;
  }
  throw Error(doing + ": an index points to another index");
}

std::string RegistryClient::get_blob(const Repo& repo, const std::string& digest,
                                     std::int64_t size) {
  const std::string too_big = "the blob " + digest + " of " + repo.str() + " is larger than the " +
                              std::to_string(kMaxSmallBlobBytes >> 20) +
                              " MiB that ktrain reads of an image config";
  if (size > static_cast<std::int64_t>(kMaxSmallBlobBytes)) throw Error(too_big);
  std::string out;
  download_blob(
      repo, digest,
      [&](std::string_view d) {
        if (out.size() + d.size() > kMaxSmallBlobBytes) throw Error(too_big);
        out.append(d);
      },
      size);
  return out;
}

void RegistryClient::download_blob(const Repo& repo, const std::string& digest,
                                   const ByteSink& sink, std::int64_t size) {
  const std::string doing = "downloading blob " + digest + " of " + repo.str();
  checked_digest(digest, "downloading a blob of " + repo.str());
  net::Request req;
  req.url = base_url(repo.registry) + "/v2/" + repo.repository + "/blobs/" + digest;
  req.follow_redirects = true;
  Sha256 hash;
  int status = 0;
  std::uint64_t received = 0;
  std::string stopped;  // why the download was stopped from here
  int stopped_status = exit_code::kFailed;
  req.on_headers = [&](int s, const net::Headers&) { status = s; };
  req.on_data = [&](std::string_view d) {
    if (status < 200 || status >= 300) return true;
    received += d.size();
    if (size >= 0 && received > static_cast<std::uint64_t>(size)) {
      stopped = "more than the " + std::to_string(size) + " bytes that its descriptor gives came";
      return false;
    }
    hash.update(d);
    // Not thrown through the transport: kept, the transfer stopped, and thrown below.
    try {
      sink(d);
    } catch (const Error& e) {
      stopped = e.what();
      stopped_status = e.exit_status();
      return false;
    } catch (const std::exception& e) {
      stopped = e.what();
      return false;
    }
    return true;
  };
  net::Response r = send(req, repo, false);
  if (!stopped.empty()) throw Error(doing + ": " + stopped, stopped_status);
  if (!r.ok()) fail(doing, req, r, repo);
  if (size >= 0 && received != static_cast<std::uint64_t>(size)) {
    throw Error(doing + ": " + std::to_string(received) + " bytes came, not the " +
                std::to_string(size) + " that its descriptor gives");
  }
  const std::string got = hash.finish();
  if (got != digest) {
    throw Error(doing + ": the content does not match its digest (it is " + got + ")");
  }
}

bool RegistryClient::blob_exists(const Repo& repo, const std::string& digest) {
  net::Request req;
  req.method = "HEAD";
  req.url = base_url(repo.registry) + "/v2/" + repo.repository + "/blobs/" + digest;
  net::Response r = send(req, repo, true);
  if (r.status == 404) return false;
  if (r.ok()) return true;
  fail("checking blob " + digest + " in " + repo.str(), req, r, repo);
}

bool RegistryClient::manifest_exists(const Repo& repo, const std::string& digest) {
  net::Request req;
  req.method = "HEAD";
  req.url = base_url(repo.registry) + "/v2/" + repo.repository + "/manifests/" + digest;
  req.headers = {{"Accept", kManifestAccept}};
  net::Response r = send(req, repo, true);
  if (r.status == 404) return false;
  if (r.ok()) return true;
  fail("checking manifest " + digest + " in " + repo.str(), req, r, repo);
}

bool RegistryClient::mount_blob(const Repo& repo, const std::string& digest,
                                const std::string& from) {
  net::Request req;
  req.method = "POST";
  req.idempotent = true;  // a repeated mount or upload start is harmless
  req.url = base_url(repo.registry) + "/v2/" + repo.repository +
            "/blobs/uploads/?mount=" + url_escape(digest) + "&from=" + url_escape(from);
  net::Response r = send(req, repo, true, {"repository:" + from + ":pull"});
  if (r.status == 201) return true;
  if (r.status == 202) return false;  // not mounted; an upload session was opened instead
  if (r.ok()) return false;
  fail("mounting blob " + digest + " from " + from + " into " + repo.str(), req, r, repo);
}

void RegistryClient::upload_blob(
    const Repo& repo, const std::string& digest, std::uint64_t size,
    const std::function<std::size_t(std::uint64_t, char*, std::size_t)>& reader,
    const std::function<void(std::uint64_t)>& progress) {
  const std::string base = base_url(repo.registry);
  const std::string doing = "uploading blob " + digest + " to " + repo.str();
  // A session broken by a dropped connection is started again from scratch.
  for (int attempt = 0;; ++attempt) {
    net::Request start;
    start.method = "POST";
    start.idempotent = true;
    start.url = base + "/v2/" + repo.repository + "/blobs/uploads/";
    net::Response r = send(start, repo, true);
    if (r.status != 202) fail(doing, start, r, repo);
    std::string location = absolute(base, r.header("Location").value_or(""));
    auto counting = [&](std::uint64_t base_off) {
      return [&, base_off](std::uint64_t off, char* buf, std::size_t len) {
        std::size_t n = reader(base_off + off, buf, len);
        if (progress) progress(base_off + off + n);
        return n;
      };
    };
    net::Request put;
    put.method = "PUT";
    put.headers = {{"Content-Type", "application/octet-stream"}};
    bool ok = true;
    if (options_.chunk_size > 0 && size > options_.chunk_size) {
      for (std::uint64_t off = 0; off < size && ok; off += options_.chunk_size) {
        std::uint64_t n = std::min(options_.chunk_size, size - off);
        net::Request patch;
        patch.method = "PATCH";
        patch.url = location;
        patch.headers = {
            {"Content-Type", "application/octet-stream"},
            {"Content-Range", std::to_string(off) + "-" + std::to_string(off + n - 1)}};
        patch.body_length = static_cast<std::int64_t>(n);
        patch.body_reader = counting(off);
        net::Response pr = send(patch, repo, true);
        if (pr.status != 202) {
          if (attempt < 2 && (pr.failure != net::TransportFailure::kNone || pr.status == 404 ||
                              pr.status == 400 || pr.status == 416)) {
            ok = false;
            break;
          }
          fail(doing, patch, pr, repo);
        }
        location = absolute(base, pr.header("Location").value_or(location));
      }
      if (!ok) continue;
      put.url = with_query(location, "digest=" + url_escape(digest));
      put.body_length = 0;
    } else {
      put.url = with_query(location, "digest=" + url_escape(digest));
      put.body_length = static_cast<std::int64_t>(size);
      put.body_reader = counting(0);
    }
    net::Response pr = send(put, repo, true);
    if (pr.status == 201 || pr.status == 204 || pr.ok()) {
      uploaded_ += size;
      return;
    }
    if (attempt < 2 &&
        (pr.failure != net::TransportFailure::kNone || pr.status == 404 || pr.status == 400)) {
      continue;
    }
    fail(doing, put, pr, repo);
  }
}

std::string RegistryClient::start_upload(const Repo& repo) {
  const std::string base = base_url(repo.registry);
  net::Request start;
  start.method = "POST";
  start.idempotent = true;
  start.url = base + "/v2/" + repo.repository + "/blobs/uploads/";
  net::Response r = send(start, repo, true);
  if (r.status != 202) fail("starting an upload to " + repo.str(), start, r, repo);
  return absolute(base, r.header("Location").value_or(""));
}

std::string RegistryClient::upload_stream(
    const Repo& repo, const std::string& location,
    const std::function<std::size_t(std::uint64_t, char*, std::size_t)>& reader) {
  net::Request patch;
  patch.method = "PATCH";
  patch.url = location;
  patch.headers = {{"Content-Type", "application/octet-stream"}};
  patch.body_length = -1;
  patch.body_reader = [&](std::uint64_t off, char* buf, std::size_t len) -> std::size_t {
    const std::size_t n = reader(off, buf, len);
    uploaded_ += n;
    return n;
  };
  net::Response r = send(patch, repo, true);
  if (r.status != 202) fail("uploading a blob to " + repo.str(), patch, r, repo);
  return absolute(base_url(repo.registry), r.header("Location").value_or(location));
}

void RegistryClient::finish_upload(const Repo& repo, const std::string& location,
                                   const std::string& digest, std::uint64_t size) {
  net::Request put;
  put.method = "PUT";
  put.url = with_query(location, "digest=" + url_escape(digest));
  put.headers = {{"Content-Type", "application/octet-stream"}};
  put.body_length = 0;
  net::Response r = send(put, repo, true);
  if (!(r.status == 201 || r.status == 204 || r.ok())) {
    fail("closing the upload of blob " + digest + " (" + std::to_string(size) + " bytes) to " +
             repo.str(),
         put, r, repo);
  }
}

void RegistryClient::cancel_upload(const Repo& repo, const std::string& location) {
  net::Request del;
  del.method = "DELETE";
  del.url = location;
  (void)send(del, repo, true);
}

BlobUploadStream::BlobUploadStream(RegistryClient& client, Repo repo, std::size_t buffer)
    : client_(client), repo_(std::move(repo)), buffer_(buffer) {}

BlobUploadStream::~BlobUploadStream() {
  end_body();
  if (sender_.joinable()) sender_.join();
  if (!location_.empty() && !closed_) {
    try {
      client_.cancel_upload(repo_, location_);
    } catch (const std::exception&) {
    }
  }
}

void BlobUploadStream::fail(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  if (!failed_) error_ = why;
  failed_ = true;
  cv_.notify_all();
}

void BlobUploadStream::end_body() {
  std::lock_guard<std::mutex> g(mu_);
  ended_ = true;
  cv_.notify_all();
}

void BlobUploadStream::send() {
  std::string why;
  try {
    const std::string opened = client_.start_upload(repo_);
    {
      std::lock_guard<std::mutex> g(mu_);
      location_ = opened;
    }
    std::string next = client_.upload_stream(
        repo_, opened,
        [this](std::uint64_t off, char* buf, std::size_t len) { return read(off, buf, len); });
    std::lock_guard<std::mutex> g(mu_);
    location_ = std::move(next);
    if (ended_ && queued_ == 0) return;  // the whole body went (or read() failed it)
    why = "the registry answered before the whole blob was sent";
  } catch (const std::exception& e) {
    why = e.what();
  }
  // Nothing more is read: a writer waiting for room goes on, and drops its bytes.
  fail(why);
}

std::size_t BlobUploadStream::read(std::uint64_t offset, char* buf, std::size_t len) {
  std::unique_lock<std::mutex> lk(mu_);
  if (offset != read_) {
    // The transport wants the body again from an earlier byte (a redirect or an auth
    // retry): those bytes are gone. End the body; the blob goes up from its file.
    if (!failed_) error_ = "the registry asked for the streamed body again";
    failed_ = true;
    cv_.notify_all();
    return 0;
  }
  cv_.wait(lk, [&] { return queued_ > 0 || ended_ || failed_; });
  if (failed_ || queued_ == 0) return 0;  // the end of the body
  std::size_t n = 0;
  while (n < len && !queue_.empty()) {
    const std::string& front = queue_.front();
    const std::size_t take = std::min(len - n, front.size() - front_read_);
    std::memcpy(buf + n, front.data() + front_read_, take);
    n += take;
    front_read_ += take;
    if (front_read_ == front.size()) {
      queue_.pop_front();
      front_read_ = 0;
    }
  }
  queued_ -= n;
  read_ += n;
  cv_.notify_all();
  return n;
}

void BlobUploadStream::write(std::string_view data) {
  if (data.empty()) return;
  std::unique_lock<std::mutex> lk(mu_);
  if (failed_) return;
  size_ += data.size();
  if (!sender_.joinable()) sender_ = std::thread([this] { send(); });
  cv_.wait(lk, [&] { return queued_ < buffer_ || failed_; });
  if (failed_) return;
  queue_.emplace_back(data);
  queued_ += data.size();
  cv_.notify_all();
}

bool BlobUploadStream::finish(const std::string& digest) {
  end_body();
  if (sender_.joinable()) sender_.join();
  if (failed_) return false;
  try {
    if (location_.empty()) location_ = client_.start_upload(repo_);  // an empty blob
    client_.finish_upload(repo_, location_, digest, size_);
    closed_ = true;
    return true;
  } catch (const std::exception& e) {
    fail(e.what());
    return false;
  }
}

void RegistryClient::put_manifest(const Repo& repo, const std::string& reference,
                                  const std::string& media_type, const std::string& bytes) {
  net::Request req;
  req.method = "PUT";
  req.url = base_url(repo.registry) + "/v2/" + repo.repository + "/manifests/" + reference;
  req.headers = {{"Content-Type", media_type}};
  req.body = bytes;
  net::Response r = send(req, repo, true);
  if (!r.ok()) fail("putting the manifest " + reference + " in " + repo.str(), req, r, repo);
}

}  // namespace ktrain::oci
