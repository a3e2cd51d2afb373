#include "kube/auth.h"

#include <ostream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_field.h"
#include "base/timefmt.h"

namespace ktrain::kube {

namespace {

std::string user_label(const ClientConfig& cfg) {
  return "user '" + cfg.user_name + "' in " + cfg.source;
}

std::string read_credential_file(const Env& env, const std::string& path, const char* what,
                                 const ClientConfig& cfg) {
  try {
    return env.fs->read_file(path);
  } catch (const Error& e) {
    throw Error(std::string("reading the ") + what + " of " + user_label(cfg) + ": " + e.what(),
                exit_code::kUnreachable);
  }
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r')) ++i;
  return s.substr(i);
}

}  // namespace

std::string exec_info_json(const ClientConfig& cfg, const Env& env) {
  const auto& x = *cfg.user.exec;
  nlohmann::ordered_json info;
  info["kind"] = "ExecCredential";
  info["apiVersion"] = x.api_version;
  nlohmann::ordered_json spec;
  if (x.provide_cluster_info) {
    nlohmann::ordered_json cluster;
    cluster["server"] = cfg.cluster.server;
    if (!cfg.cluster.tls_server_name.empty()) {
      cluster["tls-server-name"] = cfg.cluster.tls_server_name;
    }
    if (cfg.cluster.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    std::string ca = cfg.cluster.ca_pem;
    if (ca.empty() && !cfg.cluster.ca_file.empty()) {
      try {
        ca = env.fs->read_file(cfg.cluster.ca_file);
      } catch (const Error&) {
        // The transport reports an unreadable CA file; the plugin just goes without.
      }
    }
    if (!ca.empty()) cluster["certificate-authority-data"] = base64_encode(ca);
    if (!cfg.cluster.proxy_url.empty()) cluster["proxy-url"] = cfg.cluster.proxy_url;
    spec["cluster"] = cluster;
  }
  spec["interactive"] = false;
  info["spec"] = spec;
  return info.dump();
}

ExecCredential run_exec_plugin(const ClientConfig& cfg, const Env& env, ProcessRunner& runner) {
  const auto& x = *cfg.user.exec;
  const std::string who = "the exec credential plugin '" + x.command + "' of " + user_label(cfg);
  if (x.api_version != "client.authentication.k8s.io/v1" &&
      x.api_version != "client.authentication.k8s.io/v1beta1") {
    throw Error(who + " has apiVersion '" + x.api_version +
                    "'; ktrain supports client.authentication.k8s.io/v1 and v1beta1",
                exit_code::kUnreachable);
  }
  if (x.command.empty()) throw Error(who + " has no command", exit_code::kUnreachable);
  if (x.interactive_mode == "Always") {
    throw Error(who +
                    " needs an interactive terminal (interactiveMode: Always); log in with "
                    "the provider's tool first, or change interactiveMode",
                exit_code::kUnreachable);
  }
  std::map<std::string, std::string> penv = env.vars;
  for (const auto& [k, v] : x.env) penv[k] = v;
  penv["KUBERNETES_EXEC_INFO"] = exec_info_json(cfg, env);
  std::vector<std::string> argv{x.command};
  argv.insert(argv.end(), x.args.begin(), x.args.end());

  ProcessResult r;
  try {
    r = runner.run(argv, penv);
  } catch (const ProgramNotFound& e) {
    std::string msg = who + " cannot run: " + e.what();
    if (!x.install_hint.empty()) {
      msg += "\n\n" + trim(x.install_hint);
    } else {
      msg += "; install the provider's credential plugin, or fix the command in the kubeconfig";
    }
    throw Error(msg, exit_code::kUnreachable);
  }
  if (env.err && !r.err.empty()) {
    *env.err << r.err;
    if (r.err.back() != '\n') *env.err << "\n";
  }
  if (r.exit_status != 0) {
    throw Error(who + " failed with exit status " + std::to_string(r.exit_status) +
                    (r.err.empty() ? "" : " (its messages are above)"),
                exit_code::kUnreachable);
  }
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception&) {
    throw Error(who + " did not print an ExecCredential as JSON on stdout",
                exit_code::kUnreachable);
  }
  if (!out.is_object() || string_field(out, "kind") != "ExecCredential") {
    throw Error(who + " printed JSON that is not an ExecCredential", exit_code::kUnreachable);
  }
  if (string_field(out, "apiVersion") != x.api_version) {
    throw Error(who + " returned apiVersion '" + string_field(out, "apiVersion") + "', but the " +
                    "kubeconfig asks for '" + x.api_version + "'",
                exit_code::kUnreachable);
  }
  const auto found = out.find("status");
  const auto status = found != out.end() && found->is_object() ? *found : nlohmann::json::object();
  ExecCredential c;
  c.token = string_field(status, "token");
  if (holds_line_break_or_nul(c.token)) {
    throw Error(who +
                    " returned a token that holds a line break (CR or LF) or NUL, which cannot "
                    "go in an HTTP header",
                exit_code::kUnreachable);
  }
  c.client_cert_pem = string_field(status, "clientCertificateData");
  c.client_key_pem = string_field(status, "clientKeyData");
  if (c.token.empty() && (c.client_cert_pem.empty() || c.client_key_pem.empty())) {
    throw Error(who + " returned neither a token nor a client certificate and key",
                exit_code::kUnreachable);
  }
  if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
    throw Error(who +
                    " returned a client certificate without its key (or a key without its "
                    "certificate)",
                exit_code::kUnreachable);
  }
  if (auto exp = status.find("expirationTimestamp"); exp != status.end() && exp->is_string()) {
    c.expires = parse_rfc3339(exp->get<std::string>());
    if (!c.expires) {
      throw Error(
          who + " returned an invalid expirationTimestamp '" + exp->get<std::string>() + "'",
          exit_code::kUnreachable);
    }
  }
  return c;
}

Credentials::Credentials(const ClientConfig& cfg, const Env& env, ProcessRunner& runner)
    : cfg_(cfg), env_(env), runner_(runner) {
  const auto& u = cfg.user;
  if (!u.auth_provider.empty()) {
    throw Error(user_label(cfg) + " uses the auth-provider '" + u.auth_provider +
                    "', which ktrain does not support (kubectl removed auth providers too); "
                    "switch the user to an exec credential plugin: gke-gcloud-auth-plugin "
                    "for GKE, kubelogin for AKS and OIDC, 'aws eks get-token' for EKS",
                exit_code::kUnreachable);
  }
  cert_pem_ = u.client_cert_pem;
  if (cert_pem_.empty() && !u.client_cert_file.empty()) {
    cert_pem_ = read_credential_file(env, u.client_cert_file, "client certificate", cfg);
  }
  key_pem_ = u.client_key_pem;
  if (key_pem_.empty() && !u.client_key_file.empty()) {
    key_pem_ = read_credential_file(env, u.client_key_file, "client key", cfg);
  }
  if (cert_pem_.empty() != key_pem_.empty()) {
    throw Error(user_label(cfg) +
                    " has a client certificate without a key (or a key without "
                    "a certificate)",
                exit_code::kUnreachable);
  }
}

void Credentials::apply(net::Request& req) {
  const auto& u = cfg_.user;
  req.tls.client_cert_pem = cert_pem_;
  req.tls.client_key_pem = key_pem_;
  std::string bearer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (u.exec) {
      if (exec_cache_ && exec_cache_->expires && env_.clock->now() >= *exec_cache_->expires) {
        exec_cache_.reset();
      }
      if (!exec_cache_) exec_cache_ = run_exec_plugin(cfg_, env_, runner_);
      if (!exec_cache_->token.empty()) {
        bearer = exec_cache_->token;
      } else {
        req.tls.client_cert_pem = exec_cache_->client_cert_pem;
        req.tls.client_key_pem = exec_cache_->client_key_pem;
      }
    }
    if (bearer.empty() && !u.token.empty()) bearer = u.token;
    if (bearer.empty() && !u.token_file.empty()) {
      if (!file_token_) {
        std::string token = trim(read_credential_file(env_, u.token_file, "token file", cfg_));
        if (holds_line_break_or_nul(token)) {
          throw Error("the token file " + u.token_file + " of " + user_label(cfg_) +
                          " holds a line break (CR or LF) or NUL inside the token, which "
                          "cannot go in an HTTP header; write the token on one line",
                      exit_code::kUnreachable);
        }
        file_token_ = std::move(token);
      }
      bearer = *file_token_;
    }
  }
  if (!bearer.empty()) {
    req.headers.emplace_back("Authorization", "Bearer " + bearer);
  } else if (!u.username.empty() || !u.password.empty()) {
    req.headers.emplace_back("Authorization",
                             "Basic " + base64_encode(u.username + ":" + u.password));
  }
}

bool Credentials::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  bool helps = false;
  if (cfg_.user.exec) {
    exec_cache_.reset();
    helps = true;
  }
  if (!cfg_.user.token_file.empty() && cfg_.user.token.empty()) {
    file_token_.reset();
    helps = helps || !cfg_.user.exec;
  }
  return helps;
}

std::string Credentials::kind() const {
  const auto& u = cfg_.user;
  if (u.exec) return "exec plugin '" + u.exec->command + "'";
  if (!u.token.empty()) return "bearer token";
  if (!u.token_file.empty()) return "token file " + u.token_file;
  if (!cert_pem_.empty()) return "client certificate";
  if (!u.username.empty()) return "basic auth";
  return "no credentials";
}

}  // namespace ktrain::kube
