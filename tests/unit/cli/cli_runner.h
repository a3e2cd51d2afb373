#pragma once
// Runs the ktrain command line in-process, with stdin, stdout and stderr in memory
// and, optionally, an in-memory file system: what the verb tests share.

#include <sstream>
#include <string>
#include <vector>

#include "base/env.h"
#include "cmd/command.h"

namespace ktrain::testing {

/// What one run of the command line did.
struct CliRun {
  int status = 0;
  std::string out;
  std::string err;
};

/// Runs `ktrain ARGS...` (without the program name) with `stdin_text` on stdin and,
/// when given, `fs` as the file system.
inline CliRun run_cli(std::vector<const char*> args, FileSystem* fs = nullptr,
                      const std::string& stdin_text = "") {
  std::ostringstream out, err;
  std::istringstream in(stdin_text);
  Env env;
  env.in = &in;
  env.out = &out;
  env.err = &err;
  if (fs) env.fs = fs;
  args.insert(args.begin(), "ktrain");
  CliRun r;
  r.status = cmd::run_cli(static_cast<int>(args.size()), args.data(), env);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace ktrain::testing
