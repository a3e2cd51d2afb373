#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <map>

#include "base/error.h"

namespace ktrain::kube {

namespace {

/// One parsed kubeconfig file.
struct ConfigFile {
  std::string path;
  std::string dir;  ///< for relative paths in it
  YAML::Node root;
};

/// A named entry and the file it came from.
struct Entry {
  YAML::Node node;
  const ConfigFile* file = nullptr;
};

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string resolve(const std::string& path, const std::string& dir) {
  if (path.empty() || path[0] == '/') return path;
  if (path[0] == '~' && (path.size() == 1 || path[1] == '/')) return path;  // kubectl keeps it
  return dir + "/" + path;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return "";
  auto v = n[key];
  if (!v || v.IsNull()) return "";
  if (!v.IsScalar()) return "";
  return v.as<std::string>();
}

bool boolean(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return false;
  auto v = n[key];
  if (!v || !v.IsScalar()) return false;
  auto s = v.as<std::string>();
  return s == "true" || s == "True" || s == "TRUE";
}

ConfigFile parse_file(const Env& env, const std::string& path) {
  ConfigFile f;
  f.path = path;
  f.dir = dir_of(path);
  std::string text;
  try {
    text = env.fs->read_file(path);
  } catch (const Error& e) {
    throw Error(std::string("reading kubeconfig: ") + e.what(), exit_code::kUnreachable);
  }
  try {
    f.root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error("kubeconfig " + path + " is not valid YAML: line " +
                    std::to_string(e.mark.line + 1) + ": " + e.msg,
                exit_code::kUnreachable);
  }
  if (f.root && !f.root.IsNull() && !f.root.IsMap()) {
    throw Error("kubeconfig " + path + " is not a mapping", exit_code::kUnreachable);
  }
  return f;
}

/// Adds the named entries of `list_key` in `f` to `into`, keeping entries already there.
void merge_named(const ConfigFile& f, const char* list_key, const char* item_key,
                 std::map<std::string, Entry>& into) {
  if (!f.root || !f.root.IsMap()) return;
  auto list = f.root[list_key];
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) {
    throw Error("kubeconfig " + f.path + ": '" + list_key + "' must be a list",
                exit_code::kUnreachable);
  }
  for (const auto& item : list) {
    std::string name = scalar(item, "name");
    if (name.empty()) continue;
    if (into.count(name)) continue;  // the first file that names it wins
    // An entry without its `cluster:` (`user:`, `context:`) reads as an empty one: the
    // node yaml-cpp returns for a missing key cannot even be assigned.
    const YAML::Node node = item[item_key];
    into[name] = Entry{node.IsDefined() ? node : YAML::Node(), &f};
  }
}

std::string join_names(const std::map<std::string, Entry>& m) {
  std::string s;
  for (const auto& [k, v] : m) {
    if (!s.empty()) s += ", ";
    s += k;
  }
  return s.empty() ? "none" : s;
}

ClusterInfo read_cluster(const Entry& e) {
  ClusterInfo c;
  const auto& n = e.node;
  c.server = scalar(n, "server");
  auto ca = scalar(n, "certificate-authority");
  if (!ca.empty()) c.ca_file = resolve(ca, e.file->dir);
  auto ca_data = scalar(n, "certificate-authority-data");
  if (!ca_data.empty()) c.ca_pem = base64_decode(ca_data);
  c.insecure_skip_tls_verify = boolean(n, "insecure-skip-tls-verify");
  c.tls_server_name = scalar(n, "tls-server-name");
  c.proxy_url = scalar(n, "proxy-url");
  return c;
}

ExecConfig read_exec(const YAML::Node& n, const std::string& dir, const std::string& where) {
  ExecConfig x;
  x.api_version = scalar(n, "apiVersion");
  x.command = scalar(n, "command");
  // Like client-go: a command with a path separator is relative to the kubeconfig.
  if (x.command.find('/') != std::string::npos) x.command = resolve(x.command, dir);
  if (auto args = n["args"]; args && args.IsSequence()) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      // Like client-go, which decodes args as []string: a list or a map there is an error.
      if (!args[i].IsScalar()) {
        throw Error(where + ": exec.args[" + std::to_string(i) + "] must be a string",
                    exit_code::kUnreachable);
      }
      x.args.push_back(args[i].Scalar());
    }
  }
  if (auto env = n["env"]; env && env.IsSequence()) {
    for (const auto& kv : env) x.env.emplace_back(scalar(kv, "name"), scalar(kv, "value"));
  }
  x.install_hint = scalar(n, "installHint");
  x.provide_cluster_info = boolean(n, "provideClusterInfo");
  x.interactive_mode = scalar(n, "interactiveMode");
  return x;
}

UserInfo read_user(const std::string& name, const Entry& e) {
  UserInfo u;
  const auto& n = e.node;
  const auto& dir = e.file->dir;
  u.token = scalar(n, "token");
  if (auto tf = scalar(n, "tokenFile"); !tf.empty()) u.token_file = resolve(tf, dir);
  if (auto cc = scalar(n, "client-certificate"); !cc.empty()) u.client_cert_file = resolve(cc, dir);
  if (auto cd = scalar(n, "client-certificate-data"); !cd.empty()) {
    u.client_cert_pem = base64_decode(cd);
  }
  if (auto ck = scalar(n, "client-key"); !ck.empty()) u.client_key_file = resolve(ck, dir);
  if (auto kd = scalar(n, "client-key-data"); !kd.empty()) u.client_key_pem = base64_decode(kd);
  u.username = scalar(n, "username");
  u.password = scalar(n, "password");
  if (n && n.IsMap() && n["exec"] && n["exec"].IsMap()) {
    u.exec = read_exec(n["exec"], dir, "user '" + name + "' in kubeconfig " + e.file->path);
  }
  if (n && n.IsMap() && n["auth-provider"] && n["auth-provider"].IsMap()) {
    u.auth_provider = scalar(n["auth-provider"], "name");
    if (u.auth_provider.empty()) u.auth_provider = "unnamed";
  }
  return u;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

}  // namespace

bool holds_line_break_or_nul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

std::optional<ClientConfig> load_in_cluster_config(const Env& env, const std::string& dir) {
  auto host = env.var("KUBERNETES_SERVICE_HOST");
  auto port = env.var("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) return std::nullopt;
  const std::string token_path = dir + "/token";
  if (!env.fs->exists(token_path)) return std::nullopt;
  ClientConfig c;
  c.source = "in-cluster service account (" + dir + ")";
  c.in_cluster = true;
  c.context_name = "in-cluster";
  c.cluster_name = "in-cluster";
  c.user_name = "service account";
  std::string h = *host;
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";  // IPv6
  c.cluster.server = "https://" + h + ":" + *port;
  if (env.fs->exists(dir + "/ca.crt")) c.cluster.ca_file = dir + "/ca.crt";
  // The token is re-read from the file (it is rotated), like client-go does.
  c.user.token_file = token_path;
  if (!env.global.namespace_.empty()) {
    c.namespace_ = env.global.namespace_;
  } else if (env.fs->exists(dir + "/namespace")) {
    c.namespace_ = trim(env.fs->read_file(dir + "/namespace"));
  }
  if (c.namespace_.empty()) c.namespace_ = "default";
  return c;
}

ClientConfig load_client_config(const Env& env, const LoadOptions& opts) {
  std::vector<std::string> paths;
  bool explicit_file = false;
  if (!env.global.kubeconfig.empty()) {
    paths.push_back(env.global.kubeconfig);
    explicit_file = true;
  } else if (auto kc = env.var("KUBECONFIG"); kc && !kc->empty()) {
    for (const auto& p : split(*kc, ':')) {
      if (!p.empty() && env.fs->exists(p)) paths.push_back(p);
    }
  } else if (auto home = env.var("HOME"); home && !home->empty()) {
    const std::string p = *home + "/.kube/config";
    if (env.fs->exists(p)) paths.push_back(p);
  }

  if (paths.empty()) {
    if (auto ic = load_in_cluster_config(env, opts.service_account_dir)) {
      if (!env.global.context.empty()) {
        throw UsageError("--context " + env.global.context +
                         ": there is no kubeconfig (running with the in-cluster service "
                         "account)");
      }
      return *ic;
    }
    std::string where;
    if (auto kc = env.var("KUBECONFIG"); kc && !kc->empty()) {
      where = "none of the files in KUBECONFIG (" + *kc + ") exists";
    } else {
      where = "no kubeconfig at ~/.kube/config";
    }
    throw Error("no cluster configured: " + where +
                    ", and this is not a pod in a cluster (KUBERNETES_SERVICE_HOST is not "
                    "set); use --kubeconfig, or --local to run on this machine",
                exit_code::kUnreachable);
  }
  if (explicit_file && !env.fs->exists(paths[0])) {
    throw Error("kubeconfig " + paths[0] + " does not exist (from --kubeconfig)",
                exit_code::kUnreachable);
  }

  std::vector<ConfigFile> files;
  files.reserve(paths.size());
  for (const auto& p : paths) files.push_back(parse_file(env, p));

  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  for (const auto& f : files) {
    merge_named(f, "clusters", "cluster", clusters);
    merge_named(f, "users", "user", users);
    merge_named(f, "contexts", "context", contexts);
    if (current_context.empty()) current_context = scalar(f.root, "current-context");
  }

  ClientConfig c;
  c.source = "kubeconfig ";
  for (size_t i = 0; i < paths.size(); ++i) c.source += (i ? ":" : "") + paths[i];

  std::string ctx_name = env.global.context.empty() ? current_context : env.global.context;
  if (ctx_name.empty()) {
    throw Error(c.source + " has no current-context; pass --context (contexts: " +
                    join_names(contexts) + ")",
                exit_code::kUnreachable);
  }
  auto ctx = contexts.find(ctx_name);
  if (ctx == contexts.end()) {
    std::string msg = "context '" + ctx_name + "' is not in " + c.source +
                      " (contexts: " + join_names(contexts) + ")";
    if (!env.global.context.empty()) throw UsageError("--context: " + msg);
    throw Error(msg, exit_code::kUnreachable);
  }
  c.context_name = ctx_name;
  const auto& cn = ctx->second.node;
  c.cluster_name = scalar(cn, "cluster");
  c.user_name = scalar(cn, "user");
  auto cl = clusters.find(c.cluster_name);
  if (cl == clusters.end()) {
    throw Error("context '" + ctx_name + "' in " + c.source + " names cluster '" + c.cluster_name +
                    "', which is not defined (clusters: " + join_names(clusters) + ")",
                exit_code::kUnreachable);
  }
  c.cluster = read_cluster(cl->second);
  if (c.cluster.server.empty()) {
    throw Error("cluster '" + c.cluster_name + "' in " + cl->second.file->path + " has no server",
                exit_code::kUnreachable);
  }
  if (!c.user_name.empty()) {
    auto us = users.find(c.user_name);
    if (us == users.end()) {
      throw Error("context '" + ctx_name + "' in " + c.source + " names user '" + c.user_name +
                      "', which is not defined (users: " + join_names(users) + ")",
                  exit_code::kUnreachable);
    }
    c.user = read_user(c.user_name, us->second);
    // The token goes in a header as it is: a line break in it would end that header
    // and start one of the file's choosing. Like client-go, refuse it (never quoting it).
    if (holds_line_break_or_nul(c.user.token)) {
      throw Error("user '" + c.user_name + "' in kubeconfig " + us->second.file->path +
                      ": its token holds a line break (CR or LF) or NUL, which cannot go in an "
                      "HTTP header; write the token on one line",
                  exit_code::kUnreachable);
    }
  }
  c.namespace_ = env.global.namespace_;
  if (c.namespace_.empty()) c.namespace_ = scalar(cn, "namespace");
  if (c.namespace_.empty()) c.namespace_ = "default";
  return c;
}

std::string base64_decode(const std::string& in) {
  static const auto table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = i;
    return t;
  }();
  std::string out;
  out.reserve(in.size() * 3 / 4);
  int val = 0, bits = 0;
  size_t pad = 0;
  for (unsigned char ch : in) {
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    if (ch == '=') {
      ++pad;
      continue;
    }
    if (pad > 0 || table[ch] < 0) throw Error("invalid base64 data", exit_code::kUnreachable);
    val = (val << 6) | table[ch];
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((val >> bits) & 0xff);
    }
  }
  if (pad > 2) throw Error("invalid base64 data", exit_code::kUnreachable);
  return out;
}

std::string base64_encode(const std::string& in) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += (i + 1 < in.size()) ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace ktrain::kube
