// Fuzzes kubeconfig loading: KUBECONFIG with two files merged, the context chosen by
// current-context, users with tokens, certificate data (base64) and exec plugins.
//
// Input: the first kubeconfig file, then optionally "\n----\n" and a second one.
// Expected: ktrain::Error (malformed file, missing context/cluster/user).

#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "fuzz_input.h"
#include "kube/kubeconfig.h"
#include "kube_fakes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 2);
  ktrain::kube_test::TestEnv t;
  t.fs.files["/home/u/.kube/a.yaml"] = parts[0];
  if (!parts[1].empty()) t.fs.files["/home/u/b/config"] = parts[1];
  t.env.vars["KUBECONFIG"] = "/home/u/.kube/a.yaml:/home/u/b/config";
  try {
    const auto cfg = ktrain::kube::load_client_config(t.env);
    (void)cfg;
  } catch (const ktrain::Error&) {
  }
  return 0;
}
