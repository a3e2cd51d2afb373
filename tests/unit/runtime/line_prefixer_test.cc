#include "runtime/line_prefixer.h"

#include <doctest/doctest.h>

using namespace ktrain::launch;

TEST_CASE("line prefixer: whole lines get the prefix; partial lines wait for their end") {
  LinePrefixer p("[rank 3] ");
  std::string out;
  p.feed("hello\nwor", out);
  CHECK(out == "[rank 3] hello\n");
  CHECK(p.pending() == 3);
  p.feed("ld\n\nlast", out);
  CHECK(out == "[rank 3] hello\n[rank 3] world\n[rank 3] \n");
  p.flush(out);
  CHECK(out == "[rank 3] hello\n[rank 3] world\n[rank 3] \n[rank 3] last\n");
  p.flush(out);  // nothing more
  CHECK(out.size() ==
        std::string("[rank 3] hello\n[rank 3] world\n[rank 3] \n[rank 3] last\n").size());
}

TEST_CASE("line prefixer: an over-long line is cut at the cap with a continuation mark") {
  LinePrefixer p("[rank 0] ", 8);
  std::string out;
  p.feed("abcdefghij", out);  // 10 bytes, no newline yet
  CHECK(out == "[rank 0] abcdefgh\\\n");
  p.feed("klmnopqrstu\n", out);
  CHECK(out == "[rank 0] abcdefgh\\\n[rank 0] ijklmnop\\\n[rank 0] qrstu\n");
  out.clear();
  p.feed("12345678\n", out);  // exactly the cap: no mark
  CHECK(out == "[rank 0] 12345678\n");
}
