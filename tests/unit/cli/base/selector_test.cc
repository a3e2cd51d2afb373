#include <doctest/doctest.h>

#include "base/selector.h"

using ktrain::LabelSelector;
using ktrain::parse_label_selector;

namespace {

LabelSelector parse(const std::string& s) {
  std::string problem;
  auto sel = parse_label_selector(s, &problem);
  INFO(s << ": " << problem);
  REQUIRE(sel);
  return *sel;
}

std::string problem_of(const std::string& s) {
  std::string problem;
  auto sel = parse_label_selector(s, &problem);
  CHECK_FALSE(sel);
  return problem;
}

}  // namespace

TEST_CASE("label selector: kubectl's forms, matched as the API server does") {
  const std::map<std::string, std::string> labels = {
      {"team", "vision"}, {"tier", "prod"}, {"ktrain.dev/run", "r-1"}, {"gen", "7"}};
  CHECK(parse("").empty());
  CHECK(parse("  ").matches(labels));
  CHECK(parse("team=vision").matches(labels));
  CHECK(parse("team==vision").matches(labels));
  CHECK_FALSE(parse("team=nlp").matches(labels));
  CHECK(parse("team!=nlp").matches(labels));
  CHECK(parse("owner!=me").matches(labels));  // a missing label is not equal
  CHECK(parse("team in (nlp, vision)").matches(labels));
  CHECK_FALSE(parse("team notin (nlp,vision)").matches(labels));
  CHECK(parse("owner notin (a)").matches(labels));
  CHECK(parse("ktrain.dev/run").matches(labels));
  CHECK(parse("!owner").matches(labels));
  CHECK_FALSE(parse("! team").matches(labels));
  CHECK(parse("gen>6,gen<8").matches(labels));
  CHECK_FALSE(parse("gen>7").matches(labels));
  CHECK_FALSE(parse("team>1").matches(labels));  // not an integer: no match
  CHECK(parse("team=vision, tier=prod").matches(labels));
  CHECK_FALSE(parse("team=vision,tier=dev").matches(labels));
  CHECK(parse("team=").matches({{"team", ""}}));

  CHECK(parse("team = vision ,tier in (a,b), !x,y").to_string() ==
        "team=vision,tier in (a,b),!x,y");
}

TEST_CASE("label selector: what is wrong and where") {
  CHECK(problem_of("team=vision,") == "at 13: expected a label key");
  CHECK(problem_of("team vision") == "at 6: expected =, ==, !=, in, notin, > or < after `team`");
  CHECK(problem_of("team in vision") == "at 9: expected `(` after in/notin");
  CHECK(problem_of("team in (a,b") == "at 13: expected `)` to close the set");
  CHECK(problem_of("-team=a") == "at 1: `-team` is not a valid label key");
  CHECK(problem_of("team=a b") == "at 8: expected `,` between requirements");
  CHECK(problem_of("gen>x") == "at 6: `x`: > and < compare with an integer");
  CHECK(problem_of("team=-a").find("is not a valid label value") != std::string::npos);
}
