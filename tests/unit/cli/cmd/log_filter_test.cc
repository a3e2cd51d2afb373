#include "cmd/log_filter.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

using namespace ktrain::cmd;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

ktrain::backend::LogLine line(int node, std::string text, std::string ts = "",
                              bool notice = false) {
  ktrain::backend::LogLine l;
  l.rank = node;
  l.text = std::move(text);
  l.timestamp = std::move(ts);
  l.notice = notice;
  return l;
}

}  // namespace

TEST_CASE("split_rank_prefix: the launcher's [rank R] prefix, or none") {
  auto r = split_rank_prefix("[rank 12] loss 0.5");
  CHECK(r.rank == 12);
  CHECK(r.text == "loss 0.5");
  CHECK(split_rank_prefix("plain line").rank == -1);
  CHECK(split_rank_prefix("plain line").text == "plain line");
  CHECK(split_rank_prefix("[rank x] no").rank == -1);
  CHECK(split_rank_prefix("[rank ] no").rank == -1);
  CHECK(split_rank_prefix("[rank 3").rank == -1);
  CHECK(split_rank_prefix("[rank 99999999999] big").rank == -1);
}

TEST_CASE("LogFilter: --grep keeps matching lines, --exclude drops, on the text after the prefix") {
  const LogFilter f({"loss", "^epoch"}, {"nan"});
  CHECK(f.active());
  CHECK(f.keep("[rank 0] step 1 loss 0.5"));
  CHECK(f.keep("[rank 1] epoch 2 done"));  // ^ anchors at the text, after the prefix
  CHECK_FALSE(f.keep("[rank 1] step 2 lr 0.1"));
  CHECK_FALSE(f.keep("[rank 0] loss nan"));
  CHECK(f.keep("epoch 3"));
  const LogFilter none({}, {});
  CHECK_FALSE(none.active());
  CHECK(none.keep("anything"));
  const LogFilter only_exclude({}, {"^DEBUG"});
  CHECK(only_exclude.keep("[rank 0] INFO x"));
  CHECK_FALSE(only_exclude.keep("[rank 0] DEBUG x"));
}

TEST_CASE("LogFilter: a bad expression is a usage error naming the flag") {
  CHECK_THROWS_WITH_AS(LogFilter({"loss("}, {}), doctest::Contains("--grep 'loss('"),
                       ktrain::UsageError);
  CHECK_THROWS_WITH_AS(LogFilter({}, {"[a-"}), doctest::Contains("--exclude '[a-'"),
                       ktrain::UsageError);
}

TEST_CASE("LogFilter::highlighted: each match in bold red, the prefix left alone") {
  const LogFilter f({"loss", "s 0"}, {});
  CHECK(f.highlighted("[rank 0] loss 0.5") == "[rank 0] \033[1;31mloss 0\033[0m.5");
  CHECK(f.highlighted("[rank 0] step") == "[rank 0] step");
  const LogFilter r({"rank"}, {});
  // "rank" in the prefix is not the line's text.
  CHECK(r.highlighted("[rank 0] rank up") == "[rank 0] \033[1;31mrank\033[0m up");
  CHECK(LogFilter({"a"}, {}).highlighted("a b a") == "\033[1;31ma\033[0m b \033[1;31ma\033[0m");
  CHECK(LogFilter({"x*"}, {}).highlighted("abc") == "abc");  // empty matches are not marked
}

TEST_CASE("LogSaver: a file per worker rank, per node for other lines, notices apart") {
  const fs::path dir =
      fs::temp_directory_path() / ("ktrain-save-test-" + std::to_string(::getpid())) / "logs";
  fs::remove_all(dir.parent_path());
  {
    LogSaver s(dir.string(), true);
    CHECK_FALSE(fs::exists(dir));  // made with the first file
    s.write(line(0, "[rank 0] a", "2026-01-01T00:00:00Z"));
    s.write(line(1, "[rank 3] b"));
    s.write(line(1, "node line"));
    s.write(line(1, "node 1 restarted", "", true));
    s.write(line(0, "[rank 0] c", "2026-01-01T00:00:01Z"));
    CHECK(s.finish() == "4 lines in 4 files under " + dir.string());
  }
  CHECK(read(dir / "rank-0.log") == "2026-01-01T00:00:00Z a\n2026-01-01T00:00:01Z c\n");
  CHECK(read(dir / "rank-3.log") == "b\n");
  CHECK(read(dir / "node-1.log") == "node line\n");
  CHECK(read(dir / "ktrain.log") == "node 1 restarted\n");
  // Nothing is overwritten: a folder with files is refused.
  CHECK_THROWS_WITH_AS(LogSaver(dir.string(), false), doctest::Contains("holds files already"),
                       ktrain::UsageError);
  CHECK_THROWS_WITH_AS(LogSaver((dir / "rank-0.log").string(), false),
                       doctest::Contains("not a folder"), ktrain::UsageError);
  CHECK_THROWS_WITH_AS(LogSaver((dir / "rank-0.log" / "sub" / "logs").string(), false),
                       doctest::Contains("cannot make the folder"), ktrain::UsageError);
  fs::remove_all(dir.parent_path());
}
