#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "render/merge_patch.h"
#include "render/yaml_json.h"

using nlohmann::ordered_json;
using namespace ktrain;
using namespace ktrain::render;

TEST_CASE("yaml_to_json: ints stay ints, quoted scalars stay strings, booleans are true/false") {
  const auto j = parse_yaml_document(R"(a: 1
b: "1"
c: '1'
d: true
e: "true"
f: yes
g: null
h: ~
i: !!str 30
j: 1.5
k: 0x1f
l: 0o17
m: -3
n: 007
o: "0o1"
p: text with spaces
q:
r: [1, "2", x]
s: |
  block
t: !!int "42"
)",
                                     "t.yaml");
  CHECK(j["a"] == 1);
  CHECK(j["a"].is_number_integer());
  CHECK(j["b"] == "1");
  CHECK(j["c"] == "1");
  CHECK(j["d"] == true);
  CHECK(j["e"] == "true");
  CHECK(j["f"] == "yes");  // YAML 1.2: not a boolean
  CHECK(j["g"].is_null());
  CHECK(j["h"].is_null());
  CHECK(j["i"] == "30");
  CHECK(j["j"] == 1.5);
  CHECK(j["k"] == 31);
  CHECK(j["l"] == 15);
  CHECK(j["m"] == -3);
  CHECK(j["n"] == 7);
  CHECK(j["o"] == "0o1");
  CHECK(j["p"] == "text with spaces");
  CHECK(j["q"].is_null());
  CHECK(j["r"] == ordered_json::array({1, "2", "x"}));
  CHECK(j["s"] == "block\n");
  CHECK(j["t"] == 42);
}

TEST_CASE("yaml_to_json: mapping key order is kept") {
  const auto j = parse_yaml_document("z: 1\na: 2\nm: 3\n", "t.yaml");
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"z", "a", "m"});
}

TEST_CASE("yaml_to_json: a syntax error names the file, line and column") {
  CHECK_THROWS_WITH_AS(parse_yaml_document("a: [1, 2\nb: 3\n", "tpl/job.yaml"),
                       doctest::Contains("tpl/job.yaml:"), Error);
  CHECK_THROWS_WITH_AS(parse_yaml_document("a: !!int abc\n", "x.yaml"), doctest::Contains("!!int"),
                       Error);
}

TEST_CASE("to_yaml: tricky strings are quoted and read back as the same strings") {
  const std::vector<std::string> tricky = {
      "true",        "false",       "True",    "FALSE",   "yes",         "no",
      "Yes",         "NO",          "on",      "off",     "On",          "y",
      "N",           "1",           "0",       "-1",      "+1",          "1.5",
      ".5",          "1e3",         "0o1",     "0x1F",    "007",         "1_000",
      "1:30",        "2024-01-01",  ".inf",    "-.inf",   ".NaN",        "null",
      "Null",        "~",           "",        " lead",   "trail ",      "a: b",
      "a:",          ":a",          "#c",      "a #c",    "-",           "- a",
      "?",           "? a",         "[x]",     "{x}",     "*x",          "&x",
      "!x",          "|",           ">",       "%x",      "@x",          "`x",
      "'q'",         "\"q\"",       "=",       "<<",      "line\nbreak", "tab\there",
      "back\\slash", "caf\xc3\xa9", "\x01ctl", "del\x7f", ",x"};
  for (const auto& s : tricky) {
    ordered_json doc = {{"k", s}, {s.empty() ? "empty" : s, "v"}};
    const std::string text = to_yaml_document(doc);
    const auto back = parse_yaml_document(text, "roundtrip");
    INFO("string: [" << s << "] yaml: " << text);
    CHECK(back == doc);
  }
}

TEST_CASE("to_yaml: ordinary strings are left plain") {
  for (const char* s : {"--epochs", "python", "train.py", "/dev/shm", "nvidia.com/gpu",
                        "registry.example.com/ml/x:v1", "a-b", "metadata.annotations['x']",
                        "--gpus=0,1", "Indexed", "x:y", "a#b"}) {
    INFO(s);
    CHECK_FALSE(yaml_needs_quotes(s));
  }
}

TEST_CASE("to_yaml: block layout like kubectl, empty containers in flow form") {
  ordered_json obj = ordered_json::parse(R"({
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "x", "labels": {}},
    "spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
             "list": [], "nested": [[1, 2], "s"], "flag": false, "f": 0.25, "n": null}})");
  const std::string expected = R"(apiVersion: v1
kind: Service
metadata:
  name: x
  labels: {}
spec:
  ports:
  - name: a
    port: 1
  - name: b
    port: 2
  list: []
  nested:
  - - 1
    - 2
  - s
  flag: false
  f: 0.25
  "n": null
)";
  CHECK(to_yaml_document(obj) == expected);
  CHECK(parse_yaml_document(expected, "x") == obj);
}

TEST_CASE("to_yaml: several objects are separated by ---") {
  std::vector<ordered_json> objs = {{{"a", 1}}, {{"b", 2}}};
  CHECK(to_yaml(objs) == "a: 1\n---\nb: 2\n");
  CHECK(to_yaml({}) == "");
}

TEST_CASE("to_json: a v1 List of the objects, as kubectl prints several") {
  std::vector<ordered_json> objs = {{{"kind", "Job"}}, {{"kind", "Service"}}};
  const auto j = ordered_json::parse(to_json(objs));
  CHECK(j["apiVersion"] == "v1");
  CHECK(j["kind"] == "List");
  CHECK(j["items"].size() == 2);
  CHECK(j["items"][1]["kind"] == "Service");
}

TEST_CASE("merge patch: RFC 7386 examples") {
  struct Case {
    const char* target;
    const char* patch;
    const char* result;
  };
  // From RFC 7386, appendix A.
  const std::vector<Case> cases = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    auto target = ordered_json::parse(c.target);
    apply_merge_patch(target, ordered_json::parse(c.patch));
    INFO(c.target << " + " << c.patch);
    CHECK(target == ordered_json::parse(c.result));
  }
}

TEST_CASE("merge patch: existing keys keep their place, new keys are appended") {
  auto target = ordered_json::parse(R"({"a":1,"b":2,"c":3})");
  apply_merge_patch(target, ordered_json::parse(R"({"d":4,"b":20})"));
  CHECK(target.dump() == R"({"a":1,"b":20,"c":3,"d":4})");
}
