#include "project/tree.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <set>

namespace ktrain::project {

namespace {

constexpr int kMaxDepth = 100;

Origin origin_of(const YAML::Mark& m) {
  Origin o;
  if (m.line >= 0) {
    o.line = m.line + 1;
    o.column = m.column + 1;
  }
  return o;
}

bool convert(const YAML::Node& node, const std::string& path, int depth, Value& out,
             std::vector<TreeProblem>& problems) {
  out.origin = origin_of(node.Mark());
  if (depth > kMaxDepth) {
    problems.push_back({out.origin, path, "nested more than 100 levels deep"});
    return false;
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out.kind = Value::Kind::kNull;
      return true;
    case YAML::NodeType::Scalar:
      out.kind = Value::Kind::kScalar;
      out.text = node.Scalar();
      out.quoted = node.Tag() != "?";
      return true;
    case YAML::NodeType::Sequence: {
      out.kind = Value::Kind::kList;
      std::size_t i = 0;
      for (const auto& item : node) {
        Value v;
        if (!convert(item, path + "[" + std::to_string(i++) + "]", depth + 1, v, problems))
          return false;
        out.items.push_back(std::move(v));
      }
      return true;
    }
    case YAML::NodeType::Map: {
      out.kind = Value::Kind::kMap;
      std::set<std::string> seen;
      for (const auto& kv : node) {
        Origin key_origin = origin_of(kv.first.Mark());
        if (!kv.first.IsScalar()) {
          problems.push_back({key_origin, path,
                              "keys must be plain strings, found a " +
                                  std::string(kv.first.IsSequence() ? "list" : "map") +
                                  " used as a key"});
          continue;
        }
        std::string key = kv.first.Scalar();
        std::string child_path = join_path(path, key);
        if (!seen.insert(key).second) {
          problems.push_back({key_origin, child_path, "duplicate key; each key may appear once"});
          continue;
        }
        Value v;
        if (!convert(kv.second, child_path, depth + 1, v, problems)) return false;
        out.entries.emplace_back(key, std::move(v));
        out.key_origins.push_back(key_origin);
      }
      return true;
    }
  }
  return true;
}

void set_origin(Value& v, const Origin& o) {
  v.origin = o;
  for (auto& item : v.items) set_origin(item, o);
  for (auto& [k, child] : v.entries) set_origin(child, o);
  for (auto& ko : v.key_origins) ko = o;
}

struct Token {
  bool index = false;
  std::size_t n = 0;
  std::string key;
};

}  // namespace

const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

Value* Value::find(const std::string& key) {
  for (auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

std::string join_path(const std::string& parent, const std::string& key) {
  bool plain = !key.empty() && key.find_first_of(".[] \t\"'=") == std::string::npos;
  if (!plain) return parent + "[" + key + "]";
  return parent.empty() ? key : parent + "." + key;
}

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNull:
      return "nothing";
    case Value::Kind::kList:
      return "a list";
    case Value::Kind::kMap:
      return "a map";
    case Value::Kind::kScalar:
      break;
  }
  std::string out = "\"";
  std::size_t n = 0;
  for (unsigned char c : v.text) {
    if (++n > 80) {
      out += "...";
      break;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool parse_tree(const std::string& text, Value& root, std::vector<TreeProblem>& problems) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    Origin o = origin_of(e.mark);
    std::string msg = e.msg;
    if (!msg.empty()) msg[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(msg[0])));
    // yaml-cpp's message for a tab used as indentation is obscure; say what is wrong.
    std::size_t start = 0;
    for (int line = 1; line < o.line && start != std::string::npos; ++line)
      start = text.find('\n', start) == std::string::npos ? std::string::npos
                                                          : text.find('\n', start) + 1;
    if (start != std::string::npos) {
      std::size_t end = text.find_first_not_of(" \t", start);
      if (text.find('\t', start) < (end == std::string::npos ? text.size() : end))
        msg += " (a tab indents this line; YAML needs spaces)";
    }
    problems.push_back({o, "", "invalid YAML: " + msg});
    return false;
  }
  if (docs.empty()) {
    root = Value{};
    return true;
  }
  if (docs.size() > 1) {
    problems.push_back({origin_of(docs[1].Mark()), "",
                        "expected one YAML document, found " + std::to_string(docs.size()) +
                            " (separated by ---)"});
    return false;
  }
  return convert(docs[0], "", 0, root, problems);
}

void apply_set(Value& root, const std::string& set, const std::vector<std::string>& free_form_maps,
               std::vector<TreeProblem>& problems) {
  Origin origin;
  origin.set = "--set " + set;
  auto fail = [&](const std::string& path, const std::string& message) {
    problems.push_back({origin, path, message});
  };
  // Split at the first '=' outside brackets.
  std::size_t eq = std::string::npos;
  int depth = 0;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (set[i] == '[') ++depth;
    if (set[i] == ']' && depth > 0) --depth;
    if (set[i] == '=' && depth == 0) {
      eq = i;
      break;
    }
  }
  if (eq == std::string::npos) eq = set.find('=');  // unbalanced brackets: reported below
  if (eq == std::string::npos || eq == 0) {
    fail("", "expected key.path=value, like --set train.nodes=2");
    return;
  }
  const std::string spec = set.substr(0, eq);
  const std::string raw_value = set.substr(eq + 1);

  Value* cur = &root;
  std::string path;      // as printed in messages
  std::string map_path;  // keys only, for free-form map lookups
  std::size_t i = 0;
  while (i < spec.size()) {
    Token t;
    if (spec[i] == '[') {
      auto close = spec.find(']', i);
      if (close == std::string::npos) {
        fail(path, "unclosed '[' in the key path; write [N] for a list index or [key.with.dots]");
        return;
      }
      std::string inner = spec.substr(i + 1, close - i - 1);
      i = close + 1;
      if (!inner.empty() && std::all_of(inner.begin(), inner.end(), ::isdigit)) {
        t.index = true;
        t.n = std::stoul(inner);
      } else if (inner.empty()) {
        fail(path, "empty [] in the key path; write [N] for a list index or [key.with.dots]");
        return;
      } else {
        t.key = inner;
      }
    } else {
      if (spec[i] == '.') {
        if (i == 0 || i + 1 == spec.size()) {
          fail("", "empty key in the key path `" + spec + "`");
          return;
        }
        ++i;
        if (spec[i] == '[' || spec[i] == '.') {
          fail("", "empty key in the key path `" + spec + "`");
          return;
        }
        continue;
      }
      bool free_form =
          std::find(free_form_maps.begin(), free_form_maps.end(), map_path) != free_form_maps.end();
      std::size_t end = free_form ? spec.size() : spec.find_first_of(".[", i);
      if (end == std::string::npos) end = spec.size();
      t.key = spec.substr(i, end - i);
      i = end;
    }
    if (t.index) {
      if (cur->kind == Value::Kind::kNull) {
        cur->kind = Value::Kind::kList;
        cur->origin = origin;
      }
      if (cur->kind != Value::Kind::kList) {
        fail(path, "cannot use [" + std::to_string(t.n) + "]: `" + path + "` is " + describe(*cur) +
                       ", not a list");
        return;
      }
      if (t.n > cur->items.size()) {
        fail(path, "index " + std::to_string(t.n) + " is out of range: the list has " +
                       std::to_string(cur->items.size()) + " items (use [" +
                       std::to_string(cur->items.size()) + "] to append)");
        return;
      }
      if (t.n == cur->items.size()) {
        Value v;
        v.origin = origin;
        cur->items.push_back(v);
      }
      cur = &cur->items[t.n];
      path += "[" + std::to_string(t.n) + "]";
    } else {
      if (cur->kind == Value::Kind::kNull) {
        cur->kind = Value::Kind::kMap;
        cur->origin = origin;
      }
      if (cur->kind != Value::Kind::kMap) {
        fail(path, "cannot set `" + t.key + "` inside `" + path + "`: it is " + describe(*cur) +
                       ", not a map");
        return;
      }
      Value* next = cur->find(t.key);
      if (!next) {
        Value v;
        v.origin = origin;
        cur->entries.emplace_back(t.key, v);
        cur->key_origins.push_back(origin);
        next = &cur->entries.back().second;
      }
      cur = next;
      path = join_path(path, t.key);
      map_path = map_path.empty() ? t.key : map_path + "." + t.key;
    }
  }

  Value value;
  std::vector<TreeProblem> ignored;
  try {
    YAML::Node n = YAML::Load(raw_value);
    if (!convert(n, path, 0, value, ignored) || !ignored.empty()) throw YAML::Exception({}, "");
  } catch (const YAML::Exception&) {
    value = Value{};
    value.kind = Value::Kind::kScalar;
    value.text = raw_value;
    value.quoted = true;
  }
  set_origin(value, origin);
  *cur = std::move(value);
}

}  // namespace ktrain::project
