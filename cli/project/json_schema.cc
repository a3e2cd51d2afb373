#include "project/json_schema.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "project/schema_table.h"

namespace ktrain::project {

namespace {

using Json = nlohmann::ordered_json;
using K = ValueKind;

// Patterns (ECMA-262, as JSON Schema has them) for what base/names.cc,
// base/image_ref.cc, base/quantity.cc and base/duration.cc accept.
const std::string kDnsLabelPart = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
const std::string kDnsSubdomain = kDnsLabelPart + "(\\." + kDnsLabelPart + ")*";
const std::string kNamePart = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
const std::string kLabelKey = "(" + kDnsSubdomain + "/)?" + kNamePart;
const std::string kDomainPart = "[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?";
const std::string kDomain = "(" + kDomainPart + "(\\." + kDomainPart + ")+(:[0-9]{1,5})?|" +
                            kDomainPart + ":[0-9]{1,5}|localhost)";
const std::string kPathPart = "[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*";
const std::string kRepository = "(" + kDomain + "/)?" + kPathPart + "(/" + kPathPart + ")*";
const std::string kTag = "[A-Za-z0-9_][-A-Za-z0-9_.]{0,127}";
const std::string kDigest = "[A-Za-z][A-Za-z0-9]*([-+._][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
const std::string kQuantitySuffix = "([mkMGTPE]|[KMGTPE]i|[eE][-+]?[0-9]+)?";

std::string whole(const std::string& pattern) {
  return "^" + pattern + "$";
}

Json text(const std::string& pattern) {
  return {{"type", "string"}, {"pattern", whole(pattern)}};
}

/// A scalar that the parser keeps as written: a string, a number or a boolean.
Json scalar() {
  return {{"type", {"string", "number", "boolean"}}};
}

Json label_value() {
  Json j = scalar();
  j["pattern"] = whole("(" + kNamePart + ")?");
  return j;
}

/// Given and not null (the parser counts null as not set).
Json present(const SectionSpec& s, const std::vector<std::string>& keys) {
  Json j = {{"required", keys}, {"properties", Json::object()}};
  for (const auto& k : keys) {
    project_key(s.name, k);  // throws when the table has no such key
    j["properties"][k] = {{"not", {{"type", "null"}}}};
  }
  return j;
}

/// Key `key` of `s` equal to `value`.
Json equals(const SectionSpec& s, const std::string& key, const Json& value) {
  project_key(s.name, key);
  return {{"required", Json::array({key})}, {"properties", {{key, {{"const", value}}}}}};
}

/// 0 as a whole number is written: 0, +0, "00".
Json zero_whole() {
  return {{"anyOf", {{{"type", "integer"}, {"const", 0}}, text("\\+?0+")}}};
}

/// The schema of a scalar of `k.kind` (for kNone: nothing, {}).
Json kind_schema(const KeySpec& k) {
  switch (k.kind) {
    case K::kNone:
      return Json::object();
    case K::kDnsLabel: {
      // The project's name names Services too: a DNS-1035 label (a letter first).
      Json j = text(k.name == "name" ? "[a-z]([-a-z0-9]{0,61}[a-z0-9])?" : kDnsLabelPart);
      j["maxLength"] = k.max_length;
      return j;
    }
    case K::kDnsSubdomain: {
      Json j = text(kDnsSubdomain);
      j["maxLength"] = k.max_length;
      return j;
    }
    case K::kImage:
      return text(kRepository + "(:" + kTag + ")?(@" + kDigest + ")?");
    case K::kRepository:
      return text(kRepository);
    case K::kText:
      return {{"type", "string"}};
    case K::kScalar:
      return scalar();
    case K::kAbsolutePath:
      return {{"type", "string"}, {"pattern", "^(?!(.*/)?\\.\\.(/|$))/[^:]*$"}};
    case K::kHttpPath:
      return {{"type", "string"}, {"pattern", "^/"}};
    case K::kDomainPath: {
      Json j = text(kDnsSubdomain + "/[-A-Za-z0-9._~!$&'()*+,;=:@%/]+");
      j["maxLength"] = k.max_length;
      return j;
    }
    case K::kWhole: {
      // Quoted digits are read as the number too.
      Json j = {{"type", {"integer", "string"}}, {"minimum", k.min}};
      if (k.max != std::numeric_limits<std::int64_t>::max()) j["maximum"] = k.max;
      j["pattern"] = k.min > 0 ? "^\\+?0*[1-9][0-9]*$" : "^\\+?[0-9]+$";
      return j;
    }
    case K::kBoolean:
      return {{"type", "boolean"}};
    case K::kEnum:
      return {{"type", "string"}, {"enum", k.values}};
    case K::kQuantity:
      return {
          {"type", {"string", "number"}},
          {"exclusiveMinimum", 0},
          {"pattern", whole("\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" + kQuantitySuffix)},
          {"not",
           {{"type", "string"}, {"pattern", whole("\\+?(0+(\\.0*)?|\\.0+)" + kQuantitySuffix)}}}};
    case K::kDuration: {
      Json j = {{"type", "string"},
                {"minLength", 2},
                {"pattern", "^([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"}};
      if (k.min > 0) j["not"] = {{"pattern", "^(0+[dhms])+$"}};
      return j;
    }
    case K::kNodeCount:
      // As kWhole from 1, or min..max (that min is below max, the parser checks).
      return {{"type", {"integer", "string"}},
              {"minimum", 1},
              {"maximum", std::numeric_limits<std::int32_t>::max()},
              {"pattern", "^(\\+?0*[1-9][0-9]*|[1-9][0-9]{0,5}\\.\\.[1-9][0-9]{0,5})$"}};
    case K::kSurge:
      return {{"type", {"integer", "string"}},
              {"minimum", 0},
              {"maximum", std::numeric_limits<std::int32_t>::max()},
              {"pattern", "^(\\+?[0-9]+|0*([0-9]|[1-9][0-9]|100)%)$"}};
    case K::kMigProfile:
      return text("[0-9]+g\\.[0-9]+gb(\\+me)?");
    case K::kGpuProduct:
      return text(kNamePart);
    case K::kCudaVersion:
      return {{"type", {"number", "string"}},
              {"exclusiveMinimum", 0},
              {"pattern", "^[1-9][0-9]{0,2}(\\.[0-9]{1,3}(\\.[0-9]{1,9})?)?$"}};
    case K::kEnvFrom:
      return text("(secret|configMap)/" + kDnsSubdomain);
    case K::kCapability:
      return text("[A-Z][A-Z0-9_]*");
    case K::kMetricName:
      return text("[^ \\t/]+");
    case K::kTaintKey:
      return text("(" + kLabelKey + ")?");
    case K::kLabelValue:
      return label_value();
    case K::kToleration: {
      std::string effects;
      for (const auto& e : project_key("toleration", "effect").values)
        effects += (effects.empty() ? "" : "|") + e;
      return text(kLabelKey + "(=(" + kNamePart + ")?)?(:(" + effects + "))?");
    }
    case K::kEmptyDir:
      return {
          {"anyOf",
           {{{"type", "object"}, {"maxProperties", 0}}, {{"type", "boolean"}, {"const", true}}}}};
    case K::kEnvMap:
      return {{"type", "object"},
              {"propertyNames", {{"type", "string"}, {"pattern", "^[-._A-Za-z][-._A-Za-z0-9]*$"}}},
              {"additionalProperties", scalar()}};
    case K::kLabelMap:
    case K::kProjectLabels: {
      Json names = {{"type", "string"}, {"pattern", whole(kLabelKey)}};
      if (k.kind == K::kProjectLabels) {
        names["not"] = {{"anyOf",
                         {{{"pattern", "^ktrain\\.dev/"}},
                          {{"enum", {"app.kubernetes.io/managed-by", "app.kubernetes.io/name"}}}}}};
      }
      return {
          {"type", "object"}, {"propertyNames", names}, {"additionalProperties", label_value()}};
    }
    case K::kSweep: {
      Json values = {
          {"type", "array"}, {"minItems", 1}, {"uniqueItems", true}, {"items", scalar()}};
      return {{"type", "object"},
              {"propertyNames", {{"type", "string"}, {"pattern", "^[A-Za-z][A-Za-z0-9_]*$"}}},
              {"properties",
               {{"parallel",
                 {{"description",
                   "At most this many runs of the sweep at once; the others wait (a list "
                   "instead makes `parallel` a parameter)."},
                  {"anyOf",
                   {{{"type", "integer"}, {"minimum", 1}},
                    {{"type", "string"}, {"pattern", "^[1-9][0-9]*$"}},
                    values}}}}}},
              {"additionalProperties", values}};
    }
    case K::kPatches: {
      Json kinds = Json::object();
      for (const auto& kind : k.values) {
        kinds[kind] = {{"description", "An RFC 7386 JSON merge patch for every rendered " + kind +
                                           " (null removes a field)."},
                       {"type", "object"}};
      }
      return {{"type", "object"}, {"properties", kinds}, {"additionalProperties", false}};
    }
  }
  return Json::object();
}

/// `v`, or null (which the parser takes as "not set").
Json nullable(Json v) {
  if (v.contains("type") && !v.contains("anyOf")) {
    Json types = v["type"].is_array() ? v["type"] : Json::array({v["type"]});
    types.push_back("null");
    v["type"] = types;
    if (v.contains("enum")) v["enum"].push_back(nullptr);
    return v;
  }
  if (v.contains("anyOf") && v.size() == 1) {
    v["anyOf"].push_back({{"type", "null"}});
    return v;
  }
  return {{"anyOf", {v, {{"type", "null"}}}}};
}

/// The schema of key `k`'s value: its scalar form and/or its section, maybe in a list.
Json value_schema(const KeySpec& k) {
  std::vector<Json> forms;
  if (k.kind != K::kNone) forms.push_back(kind_schema(k));
  if (!k.section.empty()) {
    project_section(k.section);  // throws when the table has no such section
    forms.push_back({{"$ref", "#/definitions/" + k.section}});
  }
  Json v = forms.size() == 1 ? forms[0] : Json{{"anyOf", forms}};
  if (k.list) {
    Json list = {{"type", "array"}};
    if (k.min_items > 0) list["minItems"] = k.min_items;
    list["items"] = v;
    v = list;
  }
  if (!k.required) v = nullable(v);
  return v;
}

Json property_schema(const KeySpec& k) {
  Json p = {{"description", k.description}};
  Json v = value_schema(k);
  if (v.contains("$ref")) v = {{"allOf", Json::array({v})}};  // keywords beside $ref are ignored
  for (auto it = v.begin(); it != v.end(); ++it) p[it.key()] = it.value();
  p["examples"] = Json::array({Json::parse(k.example)});
  return p;
}

/// The cross-field rules of section `s` that draft-07 can say, as an allOf list.
Json rules(const SectionSpec& s) {
  Json all = Json::array();
  const std::string& n = s.name;
  if (n == "project") {
    all.push_back({{"description", "A train or a serve section (or both)."},
                   {"anyOf", {present(s, {"train"}), present(s, {"serve"})}}});
    // A patch needs an object of its kind to patch.
    const SectionSpec& serve = project_section("serve");
    const SectionSpec& scheduling = project_section("scheduling");
    Json serve_autoscale = present(serve, {"autoscale"});
    serve_autoscale["type"] = "object";
    Json volcano = equals(scheduling, "gang", "volcano");
    volcano["type"] = "object";
    const std::vector<std::pair<std::string, Json>> needs = {
        {"Job", present(s, {"train"})},
        {"Deployment", present(s, {"serve"})},
        {"HorizontalPodAutoscaler",
         {{"required", Json::array({"serve"})}, {"properties", {{"serve", serve_autoscale}}}}},
        {"PodGroup",
         {{"required", Json::array({"scheduling"})}, {"properties", {{"scheduling", volcano}}}}},
    };
    const auto& kinds = project_key("project", "patches").values;
    for (const auto& [kind, then] : needs) {
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
        throw std::out_of_range("no patch kind " + kind + " in the project table");
      all.push_back({{"description", "A patch of " + kind + " needs a " + kind + " to patch."},
                     {"if",
                      {{"required", Json::array({"patches"})},
                       {"properties",
                        {{"patches",
                          {{"type", "object"},
                           {"required", Json::array({kind})},
                           {"properties", {{kind, {{"type", "object"}}}}}}}}}}},
                     {"then", then}});
    }
  } else if (n == "image") {
    all.push_back({{"description", "ref, or build to make the image."},
                   {"anyOf", {present(s, {"ref"}), present(s, {"build"})}}});
  } else if (n == "train") {
    all.push_back({{"description", "mig needs gpus > 0 (the MIG slices per node)."},
                   {"if", present(s, {"mig"})},
                   {"then",
                    {{"required", Json::array({"gpus"})},
                     {"properties", {{"gpus", {{"not", zero_whole()}}}}}}}});
  } else if (n == "volume") {
    all.push_back({{"description", "Exactly one of claim, configMap, secret or emptyDir."},
                   {"oneOf",
                    {present(s, {"claim"}), present(s, {"configMap"}), present(s, {"secret"}),
                     present(s, {"emptyDir"})}}});
  } else if (n == "scheduling") {
    all.push_back({{"description", "gang: kueue needs queue (the LocalQueue that admits the job)."},
                   {"if", equals(s, "gang", "kueue")},
                   {"then", present(s, {"queue"})}});
  } else if (n == "toleration") {
    Json key = present(s, {"key"});
    key["properties"]["key"] = {{"type", "string"}, {"minLength", 1}};
    all.push_back({{"description", "operator: Exists takes no value; Equal (the default) a key."},
                   {"if", equals(s, "operator", "Exists")},
                   {"then", {{"properties", {{"value", {{"enum", {"", nullptr}}}}}}}},
                   {"else", key}});
    all.push_back({{"description", "tolerationSeconds only applies with effect: NoExecute."},
                   {"if", present(s, {"tolerationSeconds"})},
                   {"then", equals(s, "effect", "NoExecute")}});
  } else if (n == "security") {
    Json root = {{"required", Json::array({"runAsUser"})},
                 {"properties", {{"runAsUser", zero_whole()}}}};
    all.push_back({{"description", "runAsUser: 0 is root: it needs runAsNonRoot: false."},
                   {"if", root},
                   {"then", equals(s, "runAsNonRoot", false)}});
  } else if (n == "serve") {
    all.push_back({{"description", "replicas or autoscale, not both."},
                   {"not", present(s, {"replicas", "autoscale"})}});
    all.push_back({{"description", "port, unless runtime serves a model (target kserve)."},
                   {"anyOf", {present(s, {"port"}), present(s, {"runtime"})}}});
  } else if (n == "rollout") {
    Json zero = {{"anyOf", {{{"type", "integer"}, {"const", 0}}, text("(\\+?0+|0%)")}}};
    all.push_back({{"description", "maxSurge and maxUnavailable cannot both be 0."},
                   {"not",
                    {{"required", {"maxSurge", "maxUnavailable"}},
                     {"properties", {{"maxSurge", zero}, {"maxUnavailable", zero}}}}}});
  }
  return all;
}

/// The object schema of section `s` (without description).
Json section_body(const SectionSpec& s) {
  Json j = {{"type", "object"}};
  Json props = Json::object();
  Json required = Json::array();
  for (const auto& k : s.keys) {
    props[k.name] = property_schema(k);
    if (k.required) required.push_back(k.name);
  }
  j["properties"] = props;
  if (!required.empty()) j["required"] = required;
  j["additionalProperties"] = false;
  if (Json r = rules(s); !r.empty()) j["allOf"] = r;
  return j;
}

}  // namespace

std::string project_schema_id() {
  return std::string("https://ktrain.dev/schema/ktrain.yaml/") + KTRAIN_VERSION + ".json";
}

nlohmann::ordered_json project_json_schema() {
  const auto& sections = project_sections();
  Json s;
  s["$schema"] = "http://json-schema.org/draft-07/schema#";
  s["$id"] = project_schema_id();
  s["title"] = "ktrain.yaml";
  s["description"] =
      sections.front().description + " Generated by ktrain " KTRAIN_VERSION "; see ktrain.yaml(5).";
  const Json top = section_body(sections.front());
  for (auto it = top.begin(); it != top.end(); ++it) s[it.key()] = it.value();
  Json defs = Json::object();
  for (std::size_t i = 1; i < sections.size(); ++i) {
    Json d = {{"description", sections[i].description}};
    const Json body = section_body(sections[i]);
    for (auto it = body.begin(); it != body.end(); ++it) d[it.key()] = it.value();
    defs[sections[i].name] = d;
  }
  s["definitions"] = defs;
  return s;
}

}  // namespace ktrain::project
