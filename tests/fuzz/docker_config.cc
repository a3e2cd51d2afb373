// Fuzzes Docker's config.json as registry credentials are looked up in it: auths
// (base64 user:password, identity tokens), credHelpers and credsStore, and what a
// credential helper prints.
//
// Input: config.json, then optionally "\n----\n" and the credential helper's stdout;
// the helper's exit status is 0 unless the stdout starts with "!".
// Expected: ktrain::Error (malformed file, bad base64, a helper that fails).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "fuzz_input.h"
#include "kube_fakes.h"
#include "oci/credentials.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 2);
  ktrain::kube_test::TestEnv t;
  t.env.vars["DOCKER_CONFIG"] = "/home/u/.docker";
  t.fs.files["/home/u/.docker/config.json"] = parts[0];
  const std::string helper_out = parts[1];
  auto runner = [&helper_out](const std::vector<std::string>&, const std::string&) {
    if (!helper_out.empty() && helper_out[0] == '!') return std::make_pair(1, helper_out);
    return std::make_pair(0, helper_out);
  };
  ktrain::oci::DockerConfigCredentials store(t.env, runner);
  for (const char* registry : {"docker.io", "ghcr.io", "127.0.0.1:5000"}) {
    try {
      (void)store.lookup(registry);
    } catch (const ktrain::Error&) {
    }
  }
  return 0;
}
