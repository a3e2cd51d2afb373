#include "oci/credentials.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_error.h"
#include "base/json_field.h"

namespace ktrain::oci {

namespace {

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The keys under which `auths` may list a registry.
std::vector<std::string> auth_keys(const std::string& registry) {
  if (registry == "docker.io" || registry == "index.docker.io" ||
      registry == "registry-1.docker.io") {
    return {"https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io",
            "https://index.docker.io/v1"};
  }
  return {registry, "https://" + registry, "http://" + registry, "https://" + registry + "/",
          "http://" + registry + "/"};
}

Credentials from_helper(const HelperRunner& run, const std::string& helper,
                        const std::string& registry) {
  const std::string program = "docker-credential-" + helper;
  const std::string server = registry == "docker.io" ? "https://index.docker.io/v1/" : registry;
  auto [status, out] = run({program, "get"}, server + "\n");
  Credentials c;
  c.source = program;
  if (status != 0) {
    // "credentials not found in native keychain": anonymous.
    return Credentials{"", "", "", "anonymous (" + program + " has none for " + registry + ")"};
  }
  try {
    auto j = nlohmann::json::parse(out);
    std::string user = string_field(j, "Username");
    std::string secret = string_field(j, "Secret");
    if (user == "<token>") {
      c.identity_token = secret;
    } else {
      c.username = user;
      c.password = secret;
    }
  } catch (const nlohmann::json::exception&) {
    throw Error(program + " printed something that is not JSON", exit_code::kUnreachable);
  }
  return c;
}

}  // namespace

std::string base64_encode(const std::string& in) {
  std::string out;
  size_t i = 0;
  while (i + 2 < in.size()) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
    i += 3;
  }
  if (i + 1 == in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char ch : in) {
    if (ch == '=' || ch == '\n' || ch == '\r') continue;
    const char* p = std::strchr(kB64, ch);
    if (!p || ch == '\0') throw Error("not valid base64");
    v = (v << 6) | static_cast<unsigned>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

HelperRunner real_helper_runner(const Env& env) {
  const std::string path_var = env.var("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  return [path_var](const std::vector<std::string>& argv, const std::string& input) {
    std::string exe;
    size_t start = 0;
    while (start <= path_var.size()) {
      size_t end = path_var.find(':', start);
      std::string dir =
          path_var.substr(start, end == std::string::npos ? std::string::npos : end - start);
      std::string cand = (dir.empty() ? "." : dir) + "/" + argv[0];
      if (::access(cand.c_str(), X_OK) == 0) {
        exe = cand;
        break;
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
    if (exe.empty()) {
      throw Error("the credential helper " + argv[0] + " named in the Docker config is not on PATH",
                  exit_code::kUnreachable);
    }
    int in_pipe[2], out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
      throw Error(std::string("cannot run ") + argv[0] + ": " + std::strerror(errno));
    }
    pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("cannot run ") + argv[0] + ": " + std::strerror(errno));
    if (pid == 0) {
      ::dup2(in_pipe[0], 0);
      ::dup2(out_pipe[1], 1);
      // Helpers' complaints ("not a git repository", "credentials not found") stay
      // out of ktrain's output; the exit status says enough.
      int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (devnull >= 0) ::dup2(devnull, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(exe.c_str(), args.data());
      ::_exit(127);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    [[maybe_unused]] ssize_t w = ::write(in_pipe[1], input.data(), input.size());
    ::close(in_pipe[1]);
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(out_pipe[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : 128, out);
  };
}

DockerConfigCredentials::DockerConfigCredentials(Env& env, HelperRunner runner)
    : env_(env), runner_(std::move(runner)) {
  if (auto d = env.var("DOCKER_CONFIG"); d && !d->empty()) {
    path_ = *d + "/config.json";
  } else {
    path_ = env.var("HOME").value_or("") + "/.docker/config.json";
  }
}

Credentials DockerConfigCredentials::lookup(const std::string& registry) {
  if (!env_.fs->exists(path_)) return Credentials{"", "", "", "anonymous (no " + path_ + ")"};
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(env_.fs->read_file(path_));
  } catch (const nlohmann::json::exception& e) {
    // Never the text: it holds passwords and tokens.
    throw Error(path_ + ": not valid JSON: " + json_error_text(e), exit_code::kUnreachable);
  }
  if (cfg.contains("credHelpers") && cfg["credHelpers"].is_object()) {
    for (const auto& key : auth_keys(registry)) {
      if (cfg["credHelpers"].contains(key)) {
        const std::string helper = string_field(cfg["credHelpers"], key);
        if (helper.empty()) {
          throw Error(path_ + ": credHelpers." + key + " is not the name of a credential helper",
                      exit_code::kUnreachable);
        }
        return from_helper(runner_, helper, registry);
      }
    }
  }
  if (cfg.contains("auths") && cfg["auths"].is_object()) {
    for (const auto& key : auth_keys(registry)) {
      if (!cfg["auths"].contains(key)) continue;
      const auto& a = cfg["auths"][key];
      Credentials c;
      c.source = path_ + " (auths)";
      if (a.contains("auth") && a["auth"].is_string() && !a["auth"].get<std::string>().empty()) {
        std::string decoded;
        try {
          decoded = base64_decode(a["auth"].get<std::string>());
        } catch (const Error&) {
          throw Error(path_ + ": auths." + key + ".auth is not valid base64",
                      exit_code::kUnreachable);
        }
        auto colon = decoded.find(':');
        if (colon == std::string::npos) {
          throw Error(path_ + ": auths." + key + ".auth is not base64 of user:password",
                      exit_code::kUnreachable);
        }
        c.username = decoded.substr(0, colon);
        c.password = decoded.substr(colon + 1);
      }
      if (a.contains("username") && a["username"].is_string()) c.username = a["username"];
      if (a.contains("password") && a["password"].is_string()) c.password = a["password"];
      if (a.contains("identitytoken") && a["identitytoken"].is_string()) {
        c.identity_token = a["identitytoken"];
      }
      if (!c.anonymous()) return c;
    }
  }
  if (cfg.contains("credsStore") && cfg["credsStore"].is_string() &&
      !cfg["credsStore"].get<std::string>().empty()) {
    return from_helper(runner_, cfg["credsStore"].get<std::string>(), registry);
  }
  return Credentials{"", "", "", "anonymous (" + path_ + " has none for " + registry + ")"};
}

}  // namespace ktrain::oci
