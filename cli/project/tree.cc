#include "project/tree.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

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

// What aliases may add to a file, over all its aliases: each alias stands for a copy of
// the whole node it names, and aliases of aliases multiply ("a billion laughs": seven
// levels of ten aliases each are ten million values, in 330 bytes). Real project files
// alias a few lists or maps of a few values; these limits are far above that, and far
// below what would take memory or time to notice. Keys count as values.
constexpr std::uint64_t kMaxAliasValues = 100'000;
constexpr std::uint64_t kMaxAliasBytes = 16 << 20;  // of scalar text, keys included

/// yaml-cpp 0.7 has inputs on which its parser never ends, emitting null after null at
/// one place. A text of N bytes has fewer than 4N + 64 nodes (each node but a few
/// implicit nulls takes a byte of its own); past that, the parser is looping.
std::uint64_t max_nodes(std::size_t text_bytes) {
  return 4 * static_cast<std::uint64_t>(text_bytes) + 64;
}

/// A file refused before its aliases are expanded.
struct AliasProblem {
  TreeProblem problem;
};

/// Counts, from yaml-cpp's parse events, how many values the aliases of a text expand
/// to (without expanding them: each anchored node's size is kept), and throws
/// AliasProblem at the alias that passes the limits, or at an alias inside the node it
/// names (which would expand without end).
class AliasCounter : public YAML::EventHandler {
 public:
  /// `max_nodes`: the nodes (events) past which the parser is taken to be looping.
  explicit AliasCounter(std::uint64_t max_nodes) : max_nodes_(max_nodes) {}
  void OnDocumentStart(const YAML::Mark&) override {
    sizes_.clear();
    names_.clear();
    open_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    node(mark);
    leaf(anchor, 0);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    node(mark);
    leaf(anchor, value.size());
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    node(mark);
    open(anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    node(mark);
    open(anchor);
  }
  void OnMapEnd() override { close(); }
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    node(mark);
    const std::string alias = names_.count(anchor) ? "*" + names_[anchor] : "an alias";
    auto it = sizes_.find(anchor);
    if (it == sizes_.end()) {
      // yaml-cpp refuses aliases of anchors not yet defined: this one is still open.
      fail(mark, "alias " + alias + " is inside the node it names, so it would expand without end");
    }
    const Size s = it->second;
    add(s);
    expanded_.values = saturating_add(expanded_.values, s.values);
    expanded_.bytes = saturating_add(expanded_.bytes, s.bytes);
    if (expanded_.values > kMaxAliasValues) {
      fail(mark, "too many alias expansions: with " + alias + " here, the file's aliases make " +
                     "more than " + std::to_string(kMaxAliasValues) +
                     " values; ktrain expands no more");
    }
    if (expanded_.bytes > kMaxAliasBytes) {
      fail(mark, "too many alias expansions: with " + alias + " here, the file's aliases copy " +
                     "more than " + std::to_string(kMaxAliasBytes >> 20) +
                     " MiB of text; ktrain expands no more");
    }
  }

 private:
  struct Size {
    std::uint64_t values = 0;
    std::uint64_t bytes = 0;
  };
  struct Open {
    YAML::anchor_t anchor;
    Size size;
  };

  static std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  }

  [[noreturn]] static void fail(const YAML::Mark& mark, std::string message) {
    throw AliasProblem{{origin_of(mark), "", std::move(message)}};
  }

  void node(const YAML::Mark& mark) {
    if (++nodes_ > max_nodes_) {
      fail(mark,
           "the YAML parser gets stuck here, making values without end; the text is not "
           "valid YAML as written");
    }
  }
  void name(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor && !pending_name_.empty()) names_[anchor] = pending_name_;
    pending_name_.clear();
  }
  void add(const Size& s) {
    if (open_.empty()) return;
    Size& into = open_.back().size;
    into.values = saturating_add(into.values, s.values);
    into.bytes = saturating_add(into.bytes, s.bytes);
  }
  void leaf(YAML::anchor_t anchor, std::size_t bytes) {
    name(anchor);
    const Size s{1, bytes};
    if (anchor != YAML::NullAnchor) sizes_[anchor] = s;
    add(s);
  }
  void open(YAML::anchor_t anchor) {
    name(anchor);
    open_.push_back({anchor, Size{1, 0}});
  }
  void close() {
    if (open_.empty()) return;
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) sizes_[done.anchor] = done.size;
    add(done.size);
  }

  std::map<YAML::anchor_t, Size> sizes_;  ///< of the anchored nodes that have ended
  std::map<YAML::anchor_t, std::string> names_;
  std::vector<Open> open_;  ///< the sequences and maps being read, outermost first
  std::string pending_name_;
  Size expanded_;  ///< what the aliases so far stand for, over the whole text
  std::uint64_t max_nodes_;
  std::uint64_t nodes_ = 0;
};

/// Reads `text` through yaml-cpp's parser, counting what its aliases expand to; throws
/// AliasProblem when that is too much or the parser loops (max_nodes), and
/// YAML::Exception for syntax errors, as YAML::LoadAll would.
void check_aliases(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  AliasCounter counter(max_nodes(text.size()));
  while (parser.HandleNextDocument(counter)) {
  }
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

Value::~Value() = default;

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
    // yaml-cpp shares an anchored node among its aliases; converting it below copies
    // it for each, so what that makes is bounded first.
    check_aliases(text);
    docs = YAML::LoadAll(text);
  } catch (const AliasProblem& p) {
    problems.push_back(p.problem);
    return false;
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
    check_aliases(raw_value);
    YAML::Node n = YAML::Load(raw_value);
    if (!convert(n, path, 0, value, ignored) || !ignored.empty()) throw YAML::Exception({}, "");
  } catch (const AliasProblem& p) {
    fail(path, p.problem.message);
    return;
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
