#include "runtime/error.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

using namespace ktrain::launch;

TEST_CASE("printable: control characters are escaped, printable UTF-8 is kept") {
  CHECK(printable("node 1 exited 3") == "node 1 exited 3");
  CHECK(printable("a\x1b[31mb\r\n\tc\x7f") == "a\\x1b[31mb\\x0d\\x0a\\x09c\\x7f");
  CHECK(printable(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(printable("h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5 \xf0\x9f\x9a\x80") ==
        "h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5 \xf0\x9f\x9a\x80");
  CHECK(printable("back\\slash") == "back\\slash");
  // C1 controls (CSI is 0x9b), raw or as UTF-8, and what is not UTF-8 at all.
  CHECK(printable("\xc2\x9b"
                  "2J") == "\\xc2\\x9b2J");
  CHECK(printable("\x9b"
                  "2J") == "\\x9b2J");
  CHECK(printable("\xff\xc0\xaf") == "\\xff\\xc0\\xaf");  // invalid, overlong
  CHECK(printable("\xe2\x9c") == "\\xe2\\x9c");           // cut short
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(printable("\xc2\xa0") == "\xc2\xa0");             // U+00A0 is printable
}

TEST_CASE("log: a line quoting a peer reaches stderr with its control characters escaped") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  int saved = ::dup(STDERR_FILENO);
  REQUIRE(::dup2(p[1], STDERR_FILENO) == STDERR_FILENO);
  log_line("refused run 'evil\x1b]0;owned\x07\r'");
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(p[1]);
  char buf[256];
  ssize_t n = ::read(p[0], buf, sizeof buf);
  ::close(p[0]);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<size_t>(n)) ==
        "ktrain-launch: refused run 'evil\\x1b]0;owned\\x07\\x0d'\n");
}
