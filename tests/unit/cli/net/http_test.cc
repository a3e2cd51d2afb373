#include <doctest/doctest.h>

#include <string>

#include "net/http.h"

using ktrain::net::append_capped;

TEST_CASE("append_capped: keeps at most max bytes, and says when the data did not fit") {
  std::string s;
  CHECK(append_capped(s, "hello", 8));
  CHECK(s == "hello");
  CHECK_FALSE(append_capped(s, " world", 8));
  CHECK(s == "hello wo");
  CHECK_FALSE(append_capped(s, "x", 8));
  CHECK(s == "hello wo");
  CHECK(append_capped(s, "", 8));
}

TEST_CASE("append_capped: grows in powers of two up to the cap, whatever the chunks' sizes") {
  // Chunks of an odd size: the capacity still goes 4096, 8192, ... and stops at the cap,
  // so that the last growth copies half the cap, never nearly all of it.
  const std::size_t max = std::size_t{1} << 20;
  const std::string chunk(3001, 'a');
  std::string s;
  std::size_t before = 0;
  while (append_capped(s, chunk, max)) {
    if (s.capacity() != before) {
      before = s.capacity();
      const bool power_of_two = (before & (before - 1)) == 0;
      CHECK_MESSAGE(power_of_two, "capacity " << before);
    }
  }
  CHECK(s.size() == max);
  CHECK(s.capacity() == max);
}
