#include "oci/ignore.h"

#include <doctest/doctest.h>

using ktrain::oci::glob_match;
using ktrain::oci::IgnoreRules;

TEST_CASE("ignore: glob segments, ** across folders") {
  CHECK(glob_match("*.py", "a.py"));
  CHECK_FALSE(glob_match("*.py", "src/a.py"));
  CHECK(glob_match("**/*.py", "src/deep/a.py"));
  CHECK(glob_match("**/*.py", "a.py"));
  CHECK(glob_match("src/**", "src/a/b"));
  CHECK(glob_match("a/**/b", "a/b"));
  CHECK(glob_match("a/**/b", "a/x/y/b"));
  CHECK_FALSE(glob_match("a/**/b", "a/x/y/c"));
  CHECK(glob_match("data?", "data1"));
  CHECK(glob_match("[a-c].txt", "b.txt"));
  CHECK_FALSE(glob_match("[a-c].txt", "d.txt"));
}

TEST_CASE("ignore: a matched folder excludes what is below it; ! takes back; last match wins") {
  IgnoreRules r;
  r.add_file_text("# comment\n\ndata/\n*.ckpt\n!keep.ckpt\n/build\nsecret\n!secret/public.txt\n");
  CHECK(r.ignored("data"));
  CHECK(r.ignored("data/x/y.bin"));
  CHECK(r.ignored("model.ckpt"));
  CHECK_FALSE(r.ignored("keep.ckpt"));
  CHECK(r.ignored("build/out.o"));
  CHECK(r.ignored("secret/key"));
  CHECK_FALSE(r.ignored("secret/public.txt"));
  CHECK_FALSE(r.ignored("train.py"));
  CHECK_FALSE(r.ignored("src/model.py"));
  CHECK(r.has_exceptions());
}

TEST_CASE("ignore: '*' alone excludes everything, comments and blanks are skipped") {
  IgnoreRules r;
  r.add("  # nothing  ");
  r.add("");
  CHECK_FALSE(r.ignored("a"));
  r.add("*");
  CHECK(r.ignored("a"));
  CHECK(r.ignored("a/b/c"));
  CHECK_FALSE(r.has_exceptions());
}

TEST_CASE("ignore: ** in the middle and at the start") {
  IgnoreRules r;
  r.add("**/__pycache__");
  r.add("logs/**/*.log");
  CHECK(r.ignored("__pycache__/x.pyc"));
  CHECK(r.ignored("a/b/__pycache__/x.pyc"));
  CHECK(r.ignored("logs/2024/01/x.log"));
  CHECK(r.ignored("logs/x.log"));
  CHECK_FALSE(r.ignored("logs/x.txt"));
}
