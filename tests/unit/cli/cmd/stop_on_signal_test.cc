#include <doctest/doctest.h>

#include <signal.h>

#include "cmd/run_common.h"

using ktrain::cmd::StopOnSignal;

namespace {
int g_seen = 0;
extern "C" void note_signal(int sig) {
  g_seen = sig;
}
}  // namespace

TEST_CASE("StopOnSignal: SIGINT and SIGTERM are noted, not fatal; the old handlers come back") {
  struct sigaction mine = {};
  mine.sa_handler = note_signal;
  sigemptyset(&mine.sa_mask);
  struct sigaction old_int, old_term;
  ::sigaction(SIGINT, &mine, &old_int);
  ::sigaction(SIGTERM, &mine, &old_term);
  {
    StopOnSignal stop;
    CHECK(StopOnSignal::received() == 0);
    ::raise(SIGTERM);
    CHECK(StopOnSignal::received() == SIGTERM);
    CHECK(g_seen == 0);  // ours took it
  }
  {
    StopOnSignal again;  // a new one starts with nothing received
    CHECK(StopOnSignal::received() == 0);
    ::raise(SIGINT);
    CHECK(StopOnSignal::received() == SIGINT);
  }
  // Gone: the handlers from before it are back.
  ::raise(SIGINT);
  CHECK(g_seen == SIGINT);
  // A signal ignored before stays ignored.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGINT, &ignore, nullptr);
  {
    StopOnSignal background;
    ::raise(SIGINT);
    CHECK(StopOnSignal::received() == 0);
  }
  struct sigaction now = {};
  ::sigaction(SIGINT, nullptr, &now);
  const bool still_ignored = now.sa_handler == SIG_IGN;
  CHECK(still_ignored);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
}
