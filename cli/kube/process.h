#pragma once
// Running helper programs (exec credential plugins) through a small interface, so
// that tests fake them; the real one forks and execs.

#include <map>
#include <string>
#include <vector>

#include "base/error.h"

namespace ktrain::kube {

/// What a finished program left behind.
struct ProcessResult {
  int exit_status = 0;  ///< the exit status, or 128 + signal number
  std::string out;      ///< everything it wrote on stdout
  std::string err;      ///< everything it wrote on stderr
};

/// The program to run was not found (not on PATH, or no such file).
class ProgramNotFound : public Error {
 public:
  explicit ProgramNotFound(const std::string& message) : Error(message, exit_code::kUnreachable) {}
};

/// Runs programs to completion. Abstract so it can be faked; the real one is
/// RealProcessRunner.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  /// Runs argv[0] (looked up on env's PATH when it has no '/') with `env` as its whole
  /// environment and an empty stdin, and waits for it. Throws ProgramNotFound when the
  /// program does not exist, Error when it cannot be started.
  virtual ProcessResult run(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env) = 0;
};

/// fork/exec with stdout and stderr captured through pipes.
class RealProcessRunner : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env) override;
};

/// The path that `name` resolves to on `path_var` (a PATH value), or "" when none is
/// an executable file. A name with a '/' is returned as is when executable.
std::string find_executable(const std::string& name, const std::string& path_var);

}  // namespace ktrain::kube
