// The project file's tree: YAML aliases are expanded within a budget.
#include "project/tree.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ktrain::project;

namespace {

/// `levels` levels of aliases of aliases under patches.Job, ten at each level: 10^levels
/// values once expanded, in a few hundred bytes.
std::string alias_bomb(int levels) {
  std::string text = "name: bomb\npatches:\n  Job:\n    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    text += "    l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? "," : "") + prev;
    text += "]\n";
  }
  return text;
}

/// A map `b` of `n` aliases of the list `a` of ten values (eleven with the list).
std::string aliases_of_a_list(int n) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: [";
  for (int i = 0; i < n; ++i) text += i ? ", *a" : "*a";
  return text + "]\n";
}

std::string problems_text(const std::vector<TreeProblem>& problems) {
  std::string out;
  for (const auto& p : problems) {
    out += std::to_string(p.origin.line) + ":" + std::to_string(p.origin.column) + ": " +
           (p.path.empty() ? "" : p.path + ": ") + p.message + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("tree: an alias stands for a copy of the node it names") {
  Value root;
  std::vector<TreeProblem> problems;
  REQUIRE(parse_tree("a: &x {k: [1, 2]}\nb: *x\nc: &s text\nd: *s\n", root, problems));
  CHECK(problems.empty());
  const Value* b = root.find("b");
  REQUIRE(b);
  REQUIRE(b->kind == Value::Kind::kMap);
  REQUIRE(b->find("k"));
  CHECK(b->find("k")->items.size() == 2);
  REQUIRE(root.find("d"));
  CHECK(root.find("d")->text == "text");
}

TEST_CASE("tree: aliases of aliases are refused at the alias that passes 100000 values") {
  for (int levels : {7, 8, 9}) {
    CAPTURE(levels);
    Value root;
    std::vector<TreeProblem> problems;
    CHECK_FALSE(parse_tree(alias_bomb(levels), root, problems));
    // Level 4 (ten aliases of level 3's 1111 values) passes the limit at its 8th alias,
    // on line 8, column 42: 110 + 1110 + 11110 + 8 * 11111 values by then.
    CHECK(problems_text(problems) ==
          "8:42: too many alias expansions: with *l3 here, the file's aliases make more than "
          "100000 values; ktrain expands no more\n");
  }
}

TEST_CASE("tree: aliases up to the limit expand; one more value is refused") {
  Value root;
  std::vector<TreeProblem> problems;
  REQUIRE(parse_tree(aliases_of_a_list(9090), root, problems));  // 99990 values
  CHECK(problems.empty());
  REQUIRE(root.find("b"));
  CHECK(root.find("b")->items.size() == 9090);

  root = Value{};
  CHECK_FALSE(parse_tree(aliases_of_a_list(9091), root, problems));  // 100001
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].origin.line == 2);
  CHECK(problems[0].message.find("too many alias expansions: with *a here") == 0);
}

TEST_CASE("tree: aliases that copy more than 16 MiB of text are refused") {
  std::string text = "a: &big " + std::string(1 << 20, 'x') + "\nb: [";
  for (int i = 0; i < 16; ++i) text += "*big, ";
  text += "*big]\n";  // the 17th MiB
  Value root;
  std::vector<TreeProblem> problems;
  CHECK_FALSE(parse_tree(text, root, problems));
  CHECK(problems_text(problems) ==
        "2:101: too many alias expansions: with *big here, the file's aliases copy more than "
        "16 MiB of text; ktrain expands no more\n");
}

TEST_CASE("tree: an alias inside the node it names is refused, not expanded without end") {
  for (const char* text : {"a: &a [1, *a]\n", "a: &m {k: {j: *m}}\n"}) {
    CAPTURE(text);
    Value root;
    std::vector<TreeProblem> problems;
    CHECK_FALSE(parse_tree(text, root, problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].message.find("is inside the node it names, so it would expand without end") !=
          std::string::npos);
  }
}

TEST_CASE("tree: --set values with aliases have the same budget") {
  std::string bomb = "[&l0 [x, x, x, x, x, x, x, x, x, x]";
  for (int i = 1; i < 8; ++i) {
    bomb += ", &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *l" : "*l") + std::to_string(i - 1);
    bomb += "]";
  }
  bomb += "]";
  Value root;
  std::vector<TreeProblem> problems;
  REQUIRE(parse_tree("name: x\n", root, problems));
  apply_set(root, "patches.Job.x=" + bomb, {}, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].origin.set == "--set patches.Job.x=" + bomb);
  CHECK(problems[0].path == "patches.Job.x");
  CHECK(problems[0].message.find("too many alias expansions") == 0);

  problems.clear();
  apply_set(root, "patches.Job.y=[&a [1, 2], *a]", {}, problems);
  CHECK(problems.empty());
  REQUIRE(root.find("patches"));
}

TEST_CASE("tree: a text on which yaml-cpp's parser loops is refused, not parsed without end") {
  // Found by tests/fuzz (project): yaml-cpp 0.7 emits nulls without end at 1:1 for it.
  const std::string text =
      "# hello-ddp: a ring all-reduce across 2 nodes of i processes.ckageython, "
      "trai0n.pypserllo\n, so it runs on ay.example.com/ktrain/hello-ddp_LENGTH: \"6\"\n  "
      "deadline: 10m\n Neeeffect:ds no GPU and no third-party\n# Python package, so it runs on "
      "ay.example.com/ktrain/hello-ddp_LENGTH: \"6\"\n  deadline: 10m\n l :h tt1\n";
  Value root;
  std::vector<TreeProblem> problems;
  CHECK_FALSE(parse_tree(text, root, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message ==
        "the YAML parser gets stuck here, making values without end; the text is not valid YAML "
        "as written");
}

TEST_CASE("tree: the node budget leaves room for the densest valid YAML") {
  for (const std::string text : {"[[[[[[[[[[]]]]]]]]]]", "- - - - - - - -", "? ? ? ?",
                                 "{a: , b: , c: }", "a:\nb:\nc:\n", "[,]"}) {
    Value root;
    std::vector<TreeProblem> problems;
    parse_tree(text, root, problems);
    for (const auto& p : problems) CHECK(p.message.find("stuck") == std::string::npos);
  }
}
