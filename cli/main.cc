// ktrain: thin. Builds the real Env and hands over to the command line.
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
#endif
  try {
    ktrain::Env env = ktrain::make_real_env();
    return ktrain::cmd::run_cli(argc, argv, env);
  } catch (const std::exception& e) {
    std::cerr << "ktrain: internal error: " << e.what() << "\n";
    return 1;
  }
}
