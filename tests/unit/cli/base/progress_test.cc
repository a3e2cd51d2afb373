#include <doctest/doctest.h>

#include <sstream>

#include "../kube/kube_fakes.h"
#include "base/progress.h"

using ktrain::Env;
using ktrain::Progress;

namespace {

struct Fixture {
  std::ostringstream err;
  ktrain::kube_test::FakeClock clock;
  Env env;
  Fixture() {
    env.err = &err;
    env.clock = &clock;
  }
};

}  // namespace

TEST_CASE("progress: piped, a count is a plain line at each quarter and at the end") {
  Fixture f;
  Progress p(f.env, "ktrain submit");
  for (std::uint64_t n = 0; n <= 600; n += 50) p.count("objects sent", n, 600);
  CHECK(f.err.str() ==
        "ktrain submit: 150 of 600 objects sent\n"
        "ktrain submit: 300 of 600 objects sent\n"
        "ktrain submit: 450 of 600 objects sent\n"
        "ktrain submit: 600 of 600 objects sent\n");
}

TEST_CASE("progress: on a terminal, one live line, at most ten updates a second, cleared") {
  Fixture f;
  f.env.err_is_terminal = true;
  {
    Progress p(f.env, "ktrain submit");
    p.count("objects sent", 10, 100);
    p.count("objects sent", 20, 100);  // within 100 ms: not drawn
    f.clock.sleep_for(std::chrono::milliseconds(1500));
    p.count("objects sent", 50, 100);
    p.step("a step");
    p.bytes("uploading", 2048);
  }
  CHECK(f.err.str() ==
        "\r\033[K  10 of 100 objects sent"
        "\r\033[K  50 of 100 objects sent (33/s)"
        "\r\033[Kktrain submit: a step\n"
        "\r\033[K  uploading  2.0 KiB  "
        "\r\033[K");
}

TEST_CASE("progress: nothing with -q; sizes and rates in words") {
  Fixture f;
  f.env.global.quiet = true;
  f.env.err_is_terminal = true;
  Progress p(f.env, "ktrain build");
  p.count("objects sent", 1, 2);
  p.step("a step");
  p.bytes("x", 5);
  CHECK(f.err.str().empty());
  CHECK(ktrain::human_bytes(0) == "0 B");
  CHECK(ktrain::human_bytes(1536) == "1.5 KiB");
  CHECK(ktrain::human_bytes(3.0 * 1024 * 1024 * 1024) == "3.0 GiB");
  CHECK(Progress::rate(10.0 * 1024 * 1024, 2) == "5.0 MiB/s");
  CHECK(Progress::rate(1, 0).empty());
}
