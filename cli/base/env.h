#pragma once
// Env: everything a command may touch. Commands never reach for std::cout, the
// system clock, the environment or the file system directly, so a test builds an
// Env from fakes and string streams.

#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ktrain {

/// Reads and writes files. Abstract so it can be faked; the real one is RealFileSystem.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  /// Returns the whole content of `path`; throws Error("cannot read 'path': ...").
  virtual std::string read_file(const std::string& path) = 0;
  /// Writes `content` to `path` atomically (temporary file + rename).
  virtual void write_file(const std::string& path, const std::string& content) = 0;
  /// Whether something exists at `path`.
  virtual bool exists(const std::string& path) = 0;
  /// Whether `path` is a directory.
  virtual bool is_directory(const std::string& path) = 0;
};

/// The operating system's file system.
class RealFileSystem : public FileSystem {
 public:
  std::string read_file(const std::string& path) override;
  void write_file(const std::string& path, const std::string& content) override;
  bool exists(const std::string& path) override;
  bool is_directory(const std::string& path) override;
};

/// Time. Abstract so that backoff, timeouts and grace periods are tested without sleeping.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Wall-clock time now.
  virtual std::chrono::system_clock::time_point now() = 0;
  /// Monotonic time now, for measuring intervals.
  virtual std::chrono::steady_clock::time_point steady_now() = 0;
  /// Sleeps (or, in a fake, advances time) by `d`.
  virtual void sleep_for(std::chrono::milliseconds d) = 0;
};

/// The system clock.
class RealClock : public Clock {
 public:
  std::chrono::system_clock::time_point now() override;
  std::chrono::steady_clock::time_point steady_now() override;
  void sleep_for(std::chrono::milliseconds d) override;
};

/// Flags shared by every verb, spelt as kubectl spells them.
struct GlobalOptions {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;
  std::string output;  ///< "" = the verb's default
  int verbose = 0;
  bool no_color = false;
  bool quiet = false;
};

/// What a command may touch.
struct Env {
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool out_is_terminal = false;
  bool err_is_terminal = false;
  FileSystem* fs = nullptr;
  Clock* clock = nullptr;
  /// Environment variables (a copy, so tests can set their own).
  std::map<std::string, std::string> vars;
  GlobalOptions global;

  /// The value of environment variable `name`, if set.
  std::optional<std::string> var(const std::string& name) const;
  /// Whether to colour output on stderr/stdout (a terminal, and neither --no-color nor NO_COLOR).
  bool color() const;
  /// Prints "ktrain: warning: <message>" on stderr unless --quiet.
  void warn(const std::string& message) const;
};

/// The process's real environment: std streams, the real file system and clock,
/// and `environ`.
Env make_real_env();

}  // namespace ktrain
