// ktrain: thin. Builds the real Env and hands over to the command line.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cmd/command.h"

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // One malloc arena for every thread. ktrain's threads mostly wait on the network
  // while one thread moves the data; with an arena per thread, what the others free
  // is not reused by it (following 256 pods' logs peaks some 8 MiB higher).
  mallopt(M_ARENA_MAX, 1);
  // No fast bins: JSON trees free many small blocks and then a dump asks for a big
  // one, which made malloc consolidate the fast bins over and over (a fifth of the
  // time of rendering a 1000-run sweep). Small blocks still go through the
  // per-thread caches.
  mallopt(M_MXFAST, 0);
#endif
  int status = 1;
  try {
    ktrain::Env env = ktrain::make_real_env();
    status = ktrain::cmd::run_cli(argc, argv, env);
  } catch (const std::exception& e) {
    std::cerr << "ktrain: internal error: " << e.what() << "\n";
  }
#if defined(__SANITIZE_ADDRESS__)
  return status;  // let the leak checker run at exit
#else
  // Everything the command made is gone by now; what is left are caches and tables
  // built for the whole process (parsed templates, YAML scanner tables), which the
  // operating system reclaims faster than their destructors would.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(status);
#endif
}
