#include "base/env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/error.h"

extern char** environ;

namespace ktrain {

std::string RealFileSystem::read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("cannot read '" + path + "': it is a directory, not a file", exit_code::kUsage);
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw Error("cannot read '" + path + "': " + std::strerror(errno), exit_code::kUsage);
  }
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  return s.str();
}

void RealFileSystem::write_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    f << content;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + std::strerror(e));
  }
}

bool RealFileSystem::exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool RealFileSystem::is_directory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

std::chrono::system_clock::time_point RealClock::now() {
  return std::chrono::system_clock::now();
}
std::chrono::steady_clock::time_point RealClock::steady_now() {
  return std::chrono::steady_clock::now();
}
void RealClock::sleep_for(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

std::optional<std::string> Env::var(const std::string& name) const {
  auto it = vars.find(name);
  if (it == vars.end()) return std::nullopt;
  return it->second;
}

bool Env::color() const {
  if (global.no_color) return false;
  if (auto v = var("NO_COLOR"); v && !v->empty()) return false;
  return err_is_terminal;
}

void Env::warn(const std::string& message) const {
  if (global.quiet || !err) return;
  *err << "ktrain: warning: " << message << "\n";
}

Env make_real_env() {
  static RealFileSystem fs;
  static RealClock clock;
  Env env;
  env.in = &std::cin;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.out_is_terminal = ::isatty(STDOUT_FILENO) == 1;
  if (!env.out_is_terminal) {
    // Into a file or a pipe, output goes in blocks of 64 KiB (stdio's default is
    // 4 KiB): followed logs write some 16 times fewer times. Each command flushes
    // what the user must see at once (log batches, progress).
    static char out_buffer[64 * 1024];
    std::setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
  }
  env.err_is_terminal = ::isatty(STDERR_FILENO) == 1;
  env.fs = &fs;
  env.clock = &clock;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.vars.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

}  // namespace ktrain
