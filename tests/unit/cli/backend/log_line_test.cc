#include "backend/log_line.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace ktrain::backend;

TEST_CASE("log line: lines up to 1 MiB pass as they are; longer ones are cut and marked") {
  std::string storage;
  const std::string exact(kMaxLogLineBytes, 'a');
  CHECK(cut_long_line(exact, storage) == exact);
  CHECK(cut_long_line("short", storage) == "short");
  const std::string longer = exact + "bcd";
  CHECK(cut_long_line(longer, storage) == exact + " [ktrain: line cut at 1 MiB]");
}

TEST_CASE("log line: a cut never splits a UTF-8 character") {
  // "€" is 3 bytes: E2 82 AC. Placed so that the cut falls after its first, second or
  // third byte.
  for (std::size_t kept : {1, 2, 3}) {
    CAPTURE(kept);
    const std::string line = std::string(kMaxLogLineBytes - kept, 'a') + "\xE2\x82\xAC" + "tail";
    std::string storage;
    const std::string_view cut = cut_long_line(line, storage);
    const std::string body =
        std::string(kMaxLogLineBytes - kept, 'a') + (kept == 3 ? "\xE2\x82\xAC" : "");
    CHECK(cut == body + std::string(kLineCutMark));
  }
  std::string head = "ab\xF0\x9F\x98";  // a 4-byte character missing its last byte
  mark_cut_line(head);
  CHECK(head == "ab [ktrain: line cut at 1 MiB]");
}

TEST_CASE("LineFramer: lines cut across chunks of any size come out whole, in order") {
  const std::string stream = "one\ntwo\r\n\nthree and more\nlast";
  for (std::size_t size = 1; size <= stream.size(); ++size) {
    ktrain::backend::LineFramer framer;
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < stream.size(); at += size) {
      CHECK(framer.feed(std::string_view(stream).substr(at, size), [&](std::string_view l) {
        lines.emplace_back(l);
        return true;
      }));
    }
    CHECK(lines == std::vector<std::string>{"one", "two\r", "", "three and more"});
    CHECK(framer.rest() == "last");
    CHECK(framer.progressed());
  }
}
