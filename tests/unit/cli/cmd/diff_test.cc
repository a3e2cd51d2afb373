#include "cmd/diff.h"

#include <doctest/doctest.h>

using ktrain::cmd::comparable;
using ktrain::cmd::unified_diff;
using nlohmann::json;

namespace {
std::vector<std::string> n_lines(int n, const std::string& prefix = "l") {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}
}  // namespace

TEST_CASE("unified_diff: the same is empty; a change is one hunk with 3 lines of context") {
  const auto a = n_lines(10);
  CHECK(unified_diff(a, a, "a", "b") == "");
  auto b = a;
  b[4] = "five";
  CHECK(unified_diff(a, b, "live x", "ktrain x") ==
        "--- live x\n+++ ktrain x\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n");
}

TEST_CASE("unified_diff: changes far apart are two hunks; near, one") {
  const auto a = n_lines(30);
  auto far = a;
  far[2] = "x";
  far[25] = "y";
  const std::string d = unified_diff(a, far, "a", "b");
  CHECK(d.find("@@ -1,6 +1,6 @@") != std::string::npos);
  CHECK(d.find("@@ -23,7 +23,7 @@") != std::string::npos);
  auto near = a;
  near[2] = "x";
  near[7] = "y";
  const std::string d2 = unified_diff(a, near, "a", "b");
  CHECK(d2.find("@@ -1,11 +1,11 @@") != std::string::npos);
  CHECK(d2.find("\n@@ ", d2.find("@@ -1,11") + 2) == std::string::npos);  // one hunk
}

TEST_CASE("unified_diff: added and removed lines, and all new") {
  const std::vector<std::string> a = {"a", "b", "c"};
  const std::vector<std::string> b = {"a", "x", "c", "d"};
  CHECK(unified_diff(a, b, "a", "b") == "--- a\n+++ b\n@@ -1,3 +1,4 @@\n a\n-b\n+x\n c\n+d\n");
  CHECK(unified_diff({}, {"p", "q"}, "a", "b") == "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+p\n+q\n");
  CHECK(unified_diff({"p"}, {}, "a", "b") == "--- a\n+++ b\n@@ -1,1 +0,0 @@\n-p\n");
}

TEST_CASE("comparable: what the server keeps for itself goes; Secret values are masked") {
  const json live = {{"kind", "Secret"},
                     {"metadata",
                      {{"name", "s"},
                       {"uid", "u"},
                       {"resourceVersion", "5"},
                       {"generation", 2},
                       {"creationTimestamp", "t"},
                       {"managedFields", json::array()},
                       {"labels", {{"a", "b"}}}}},
                     {"data", {{"token", "c2VjcmV0"}}},
                     {"status", {{"x", 1}}}};
  const json c = comparable(live);
  CHECK(c == json{{"kind", "Secret"},
                  {"metadata", {{"name", "s"}, {"labels", {{"a", "b"}}}}},
                  {"data", {{"token", "***"}}}});
}
