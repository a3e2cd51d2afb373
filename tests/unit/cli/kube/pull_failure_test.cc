// Image pulls that cannot succeed, told from those that may, and how long a wait
// watches one before it gives up.
#include <doctest/doctest.h>

#include <chrono>

#include "kube/pull_failure.h"

using ktrain::kube::kPullGiveUp;
using ktrain::kube::pull_failure_is_permanent;
using ktrain::kube::PullFailureWatch;

namespace {
// What containerd 1.7/2.x says through the kubelet for a tag nobody pushed.
const char* const kNotFound =
    "rpc error: code = NotFound desc = failed to pull and unpack image "
    "\"127.0.0.1:5000/team/app:0.1.0\": failed to resolve reference "
    "\"127.0.0.1:5000/team/app:0.1.0\": 127.0.0.1:5000/team/app:0.1.0: not found";
}  // namespace

TEST_CASE("pull failures: not found, unauthorized and bad references cannot succeed") {
  CHECK(pull_failure_is_permanent("ErrImagePull", kNotFound));
  CHECK(pull_failure_is_permanent(
      "ErrImagePull",
      "failed to pull and unpack image \"r/x:1\": failed to authorize: failed to fetch "
      "anonymous token: unexpected status from GET request: 401 Unauthorized"));
  CHECK(pull_failure_is_permanent("ErrImagePull",
                                  "pull access denied, repository does not exist or may require "
                                  "authorization: server message: insufficient_scope"));
  CHECK(pull_failure_is_permanent("InvalidImageName",
                                  "Failed to apply default image tag \"Bad:Ref\": couldn't parse "
                                  "image name: invalid reference format"));
  CHECK(pull_failure_is_permanent("ErrImageNeverPull", "Container image is not present"));
  // A newer kubelet's back-off carries the error it backs off from.
  CHECK(pull_failure_is_permanent(
      "ImagePullBackOff", std::string("Back-off pulling image \"x\": ErrImagePull: ") + kNotFound));
}

TEST_CASE("pull failures: a registry that is slow, down or busy may come back") {
  CHECK_FALSE(pull_failure_is_permanent(
      "ErrImagePull",
      "failed to do request: Head \"https://r/v2/x/manifests/1\": dial tcp "
      "10.0.0.1:443: connect: connection refused"));
  CHECK_FALSE(pull_failure_is_permanent("ErrImagePull", "i/o timeout"));
  CHECK_FALSE(
      pull_failure_is_permanent("ErrImagePull", "unexpected status code 429 Too Many Requests"));
  CHECK_FALSE(pull_failure_is_permanent("ErrImagePull", "503 Service Unavailable"));
  CHECK_FALSE(pull_failure_is_permanent("ImagePullBackOff", "Back-off pulling image \"x\""));
  CHECK_FALSE(pull_failure_is_permanent("CreateContainerConfigError", "secret \"s\" not found"));
}

TEST_CASE("pull failure watch: gives up after kPullGiveUp of a failure that cannot pass") {
  using std::chrono::seconds;
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  PullFailureWatch w;
  w.observe(1, "ErrImagePull", kNotFound, t0);
  CHECK_FALSE(w.given_up(t0 + seconds(5)));
  // The kubelet's back-off between pulls keeps the same failure going.
  w.observe(1, "ImagePullBackOff", "Back-off pulling image \"x\"", t0 + seconds(10));
  w.observe(1, "ErrImagePull", kNotFound, t0 + seconds(20));
  const auto what = w.given_up(t0 + kPullGiveUp);
  REQUIRE(what);
  CHECK(what->find("node 1: ErrImagePull: ") == 0);
  CHECK(what->find("not found") != std::string::npos);
}

TEST_CASE("pull failure watch: a pull that may pass, or a rank that starts, resets it") {
  using std::chrono::seconds;
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  PullFailureWatch w;
  w.observe(0, "ErrImagePull", kNotFound, t0);
  w.observe(0, "", "", t0 + seconds(10));  // pulled after all: running
  CHECK_FALSE(w.given_up(t0 + seconds(60)));
  w.observe(0, "ErrImagePull", kNotFound, t0 + seconds(60));
  w.observe(0, "ErrImagePull", "dial tcp: i/o timeout", t0 + seconds(70));  // transient
  CHECK_FALSE(w.given_up(t0 + seconds(200)));
  // A transient failure alone never gives up.
  w.observe(2, "ErrImagePull", "503 Service Unavailable", t0);
  CHECK_FALSE(w.given_up(t0 + seconds(3600)));
}
