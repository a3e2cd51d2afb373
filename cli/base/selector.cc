#include "base/selector.h"

#include <cctype>
#include <charconv>

#include "base/names.h"

namespace ktrain {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

/// A character that can be part of a key or a value.
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
         c == '/';
}

std::optional<long long> to_integer(const std::string& s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::optional<LabelSelector> parse(std::string* problem) {
    LabelSelector sel;
    skip_spaces();
    if (at_end()) return sel;
    while (true) {
      LabelRequirement r;
      if (!requirement(r)) {
        if (problem) *problem = problem_;
        return std::nullopt;
      }
      sel.requirements.push_back(std::move(r));
      skip_spaces();
      if (at_end()) return sel;
      if (s_[i_] != ',') {
        fail("expected `,` between requirements");
        if (problem) *problem = problem_;
        return std::nullopt;
      }
      ++i_;
      skip_spaces();
    }
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  void skip_spaces() {
    while (!at_end() && is_space(s_[i_])) ++i_;
  }
  bool fail(const std::string& what) {
    problem_ = "at " + std::to_string(i_ + 1) + ": " + what;
    return false;
  }
  std::string word() {
    const size_t start = i_;
    while (!at_end() && is_word(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  bool key(std::string& out) {
    const size_t start = i_;
    out = word();
    if (out.empty()) return fail("expected a label key");
    if (!is_label_key(out)) {
      i_ = start;
      return fail("`" + out + "` is not a valid label key");
    }
    return true;
  }
  bool value(std::string& out) {
    const size_t start = i_;
    out = word();
    if (!is_label_value(out)) {
      i_ = start;
      return fail("`" + out +
                  "` is not a valid label value (at most 63 letters, digits, `-`, "
                  "`_` or `.`, starting and ending with a letter or digit)");
    }
    return true;
  }
  bool requirement(LabelRequirement& r) {
    using Op = LabelRequirement::Op;
    if (s_[i_] == '!') {
      ++i_;
      skip_spaces();
      r.op = Op::kNotExists;
      return key(r.key);
    }
    if (!key(r.key)) return false;
    skip_spaces();
    if (at_end() || s_[i_] == ',') {
      r.op = Op::kExists;
      return true;
    }
    auto rest = s_.substr(i_);
    std::string v;
    if (rest.rfind("==", 0) == 0 || rest.rfind("!=", 0) == 0) {
      r.op = rest[0] == '!' ? Op::kNotEquals : Op::kEquals;
      i_ += 2;
    } else if (rest[0] == '=' || rest[0] == '>' || rest[0] == '<') {
      r.op = rest[0] == '=' ? Op::kEquals : rest[0] == '>' ? Op::kGreater : Op::kLess;
      i_ += 1;
    } else if (rest.rfind("in", 0) == 0 || rest.rfind("notin", 0) == 0) {
      r.op = rest[0] == 'i' ? Op::kIn : Op::kNotIn;
      i_ += r.op == Op::kIn ? 2 : 5;
      return set(r);
    } else {
      return fail("expected =, ==, !=, in, notin, > or < after `" + r.key + "`");
    }
    skip_spaces();
    if (!value(v)) return false;
    if ((r.op == Op::kGreater || r.op == Op::kLess) && !to_integer(v)) {
      return fail("`" + v + "`: > and < compare with an integer");
    }
    r.values.push_back(v);
    return true;
  }
  bool set(LabelRequirement& r) {
    skip_spaces();
    if (at_end() || s_[i_] != '(') return fail("expected `(` after in/notin");
    ++i_;
    while (true) {
      skip_spaces();
      std::string v;
      if (!value(v)) return false;
      r.values.push_back(v);
      skip_spaces();
      if (at_end()) return fail("expected `)` to close the set");
      if (s_[i_] == ')') {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return fail("expected `,` or `)` in the set");
      ++i_;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string problem_;
};

}  // namespace

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  using Op = LabelRequirement::Op;
  for (const auto& r : requirements) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    auto in_values = [&] {
      for (const auto& v : r.values) {
        if (has && it->second == v) return true;
      }
      return false;
    };
    bool ok = false;
    switch (r.op) {
      case Op::kExists:
        ok = has;
        break;
      case Op::kNotExists:
        ok = !has;
        break;
      case Op::kEquals:
      case Op::kIn:
        ok = in_values();
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !in_values();
        break;
      case Op::kGreater:
      case Op::kLess: {
        auto have = has ? to_integer(it->second) : std::nullopt;
        auto want = to_integer(r.values.front());
        ok = have && want && (r.op == Op::kGreater ? *have > *want : *have < *want);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

std::string LabelSelector::to_string() const {
  using Op = LabelRequirement::Op;
  std::string out;
  for (const auto& r : requirements) {
    if (!out.empty()) out += ",";
    std::string set;
    for (const auto& v : r.values) set += (set.empty() ? "" : ",") + v;
    switch (r.op) {
      case Op::kExists:
        out += r.key;
        break;
      case Op::kNotExists:
        out += "!" + r.key;
        break;
      case Op::kEquals:
        out += r.key + "=" + set;
        break;
      case Op::kNotEquals:
        out += r.key + "!=" + set;
        break;
      case Op::kIn:
        out += r.key + " in (" + set + ")";
        break;
      case Op::kNotIn:
        out += r.key + " notin (" + set + ")";
        break;
      case Op::kGreater:
        out += r.key + ">" + set;
        break;
      case Op::kLess:
        out += r.key + "<" + set;
        break;
    }
  }
  return out;
}

std::optional<LabelSelector> parse_label_selector(std::string_view text, std::string* problem) {
  return Parser(text).parse(problem);
}

}  // namespace ktrain
