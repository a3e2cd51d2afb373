// ktrain: thin. Builds the real Env and hands over to the command line.
#include <exception>
#include <iostream>

#include "cmd/command.h"

int main(int argc, char** argv) {
  try {
    ktrain::Env env = ktrain::make_real_env();
    return ktrain::cmd::run_cli(argc, argv, env);
  } catch (const std::exception& e) {
    std::cerr << "ktrain: internal error: " << e.what() << "\n";
    return 1;
  }
}
