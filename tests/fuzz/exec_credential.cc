// Fuzzes what an exec credential plugin prints (an ExecCredential, v1 or v1beta1) and
// its use: the credential is cached, applied to a request, and dropped after a 401.
//
// Input: the plugin's stdout; its first byte picks the apiVersion configured.
// Expected: ktrain::Error (exit 3: not an ExecCredential, bad token, bad time).

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "kube/auth.h"
#include "kube_fakes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ktrain::kube_test::TestEnv t;
  ktrain::kube_test::FakeProcessRunner runner;
  auto cfg = ktrain::kube_test::token_config("");
  ktrain::kube::ExecConfig x;
  x.api_version =
      (data[0] & 1) ? "client.authentication.k8s.io/v1" : "client.authentication.k8s.io/v1beta1";
  x.command = "get-token";
  x.provide_cluster_info = (data[0] & 2) != 0;
  cfg.user.exec = x;
  runner.results.push_back({0, std::string(reinterpret_cast<const char*>(data) + 1, size - 1), ""});
  try {
    ktrain::kube::Credentials creds(cfg, t.env, runner);
    ktrain::net::Request r;
    creds.apply(r);
    creds.invalidate();
    ktrain::net::Request again;
    creds.apply(again);
  } catch (const ktrain::Error&) {
  }
  return 0;
}
