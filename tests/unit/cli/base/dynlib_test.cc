#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "base/dynlib.h"

using ktrain::DynamicLibrary;

TEST_CASE("DynamicLibrary binds the symbols of a library that is there") {
  DynamicLibrary libc("libc.so.6");
  std::size_t (*len)(const char*) = nullptr;
  libc.bind(len, "strlen");
  REQUIRE(libc.ok());
  REQUIRE(static_cast<bool>(len));
  CHECK(len("ktrain") == 6);
}

TEST_CASE("DynamicLibrary names a library that cannot be loaded") {
  DynamicLibrary none("libktrain-no-such-library.so.9");
  int (*fn)() = nullptr;
  none.bind(fn, "anything");
  CHECK_FALSE(none.ok());
  CHECK_FALSE(static_cast<bool>(fn));
  CHECK(none.error().find("cannot load libktrain-no-such-library.so.9") != std::string::npos);
}

TEST_CASE("DynamicLibrary lists the symbols a library lacks") {
  DynamicLibrary libc("libc.so.6");
  int (*a)() = nullptr;
  int (*b)() = nullptr;
  std::size_t (*len)(const char*) = nullptr;
  libc.bind(a, "ktrain_no_such_symbol_a");
  libc.bind(len, "strlen");
  libc.bind(b, "ktrain_no_such_symbol_b");
  CHECK_FALSE(libc.ok());
  CHECK(libc.error() == "libc.so.6 lacks ktrain_no_such_symbol_a, ktrain_no_such_symbol_b");
}

namespace {
struct LibcTable {
  std::size_t (*len)(const char*) = nullptr;
};
struct MissingTable {
  int (*fn)() = nullptr;
};
}  // namespace

TEST_CASE("load_library_once binds a table once and keeps it") {
  int binds = 0;
  auto load = [&] {
    return &ktrain::load_library_once<LibcTable>("libc.so.6", "install libc",
                                                 [&](DynamicLibrary& dl, LibcTable& t) {
                                                   ++binds;
                                                   dl.bind(t.len, "strlen");
                                                 });
  };
  const LibcTable* first = load();
  CHECK(load() == first);
  CHECK(binds == 1);
  CHECK(first->len("abc") == 3);
}

TEST_CASE("load_library_once throws the same error, with the hint, on every call") {
  auto load = [] {
    return ktrain::load_library_once<MissingTable>(
        "libktrain-no-such-library.so.9", "install ktrain-nothing",
        [](DynamicLibrary& dl, MissingTable& t) { dl.bind(t.fn, "anything"); });
  };
  for (int i = 0; i < 2; ++i) {
    CHECK_THROWS_WITH_AS(load(), doctest::Contains("cannot load libktrain-no-such-library.so.9"),
                         ktrain::Error);
    CHECK_THROWS_WITH_AS(load(), doctest::Contains("; install ktrain-nothing"), ktrain::Error);
  }
}
