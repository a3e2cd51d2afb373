// Fuzzes the registry's WWW-Authenticate challenge parser.
//
// Input: the header's value. Expected: nothing thrown.

#include <cstddef>
#include <cstdint>
#include <string>

#include "oci/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string header(reinterpret_cast<const char*>(data), size);
  auto [scheme, params] = ktrain::oci::parse_challenge(header);
  (void)scheme;
  (void)params;
  return 0;
}
