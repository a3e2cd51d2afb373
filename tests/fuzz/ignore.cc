// Fuzzes .ktrainignore: the patterns of an ignore file, and paths matched against them.
//
// Input: the ignore file, then optionally "\n----\n" and paths, one a line.
// Expected: nothing thrown.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_input.h"
#include "oci/ignore.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 2);
  ktrain::oci::IgnoreRules rules;
  rules.add_file_text(parts[0]);
  std::istringstream lines(parts[1]);
  int paths = 0;
  for (std::string path; std::getline(lines, path) && paths < 64; ++paths) {
    (void)rules.ignored(path);
    for (const auto& p : rules.patterns()) (void)ktrain::oci::glob_match(p, path);
  }
  (void)rules.ignored("src/main.py");
  (void)rules.ignored("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z");
  return 0;
}
