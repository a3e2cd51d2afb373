#include "base/quantity.h"

#include <cctype>
#include <cmath>

namespace ktrain {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Parses <sign>?<digits>[.<digits>] at the front of `s`; returns the characters used (0 if none).
std::size_t scan_number(std::string_view s, long double& value) {
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  long double v = 0;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) {
    v = v * 10 + (s[i++] - '0');
    ++digits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    long double scale = 0.1L;
    while (i < s.size() && is_digit(s[i])) {
      v += (s[i++] - '0') * scale;
      scale /= 10;
      ++digits;
    }
  }
  if (digits == 0) return 0;
  value = negative ? -v : v;
  return i;
}

}  // namespace

std::optional<long double> parse_quantity(std::string_view s) {
  long double v = 0;
  std::size_t n = scan_number(s, v);
  if (n == 0) return std::nullopt;
  std::string_view suffix = s.substr(n);
  if (suffix.empty()) return v;
  if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1 &&
      (is_digit(suffix[1]) || suffix[1] == '+' || suffix[1] == '-')) {
    std::string_view exp = suffix.substr(1);
    std::size_t i = 0;
    bool negative = false;
    if (exp[0] == '+' || exp[0] == '-') negative = exp[i++] == '-';
    if (i == exp.size()) return std::nullopt;
    int e = 0;
    for (; i < exp.size(); ++i) {
      if (!is_digit(exp[i])) return std::nullopt;
      e = e * 10 + (exp[i] - '0');
      if (e > 1000) return std::nullopt;
    }
    return v * std::pow(10.0L, negative ? -e : e);
  }
  struct Suffix {
    std::string_view text;
    long double factor;
  };
  static constexpr Suffix kSuffixes[] = {
      {"n", 1e-9L},  // metrics-server's CPU ("12345678n")
      {"u", 1e-6L},
      {"m", 1e-3L},
      {"k", 1e3L},
      {"M", 1e6L},
      {"G", 1e9L},
      {"T", 1e12L},
      {"P", 1e15L},
      {"E", 1e18L},
      {"Ki", 1024.0L},
      {"Mi", 1048576.0L},
      {"Gi", 1073741824.0L},
      {"Ti", 1099511627776.0L},
      {"Pi", 1125899906842624.0L},
      {"Ei", 1152921504606846976.0L},
  };
  for (const auto& x : kSuffixes)
    if (suffix == x.text) return v * x.factor;
  return std::nullopt;
}

bool is_quantity(std::string_view s) {
  return parse_quantity(s).has_value();
}

std::string quantity_hint(std::string_view s) {
  long double v = 0;
  std::size_t n = scan_number(s, v);
  if (n == 0 || n == s.size()) return "";
  std::string_view suffix = s.substr(n);
  // <letter>[i|I][b|B], e.g. GB, gb, Gib, gi
  if (suffix.size() > 3) return "";
  char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
  if (std::string_view("KMGTPE").find(unit) == std::string_view::npos) return "";
  std::string_view tail = suffix.substr(1);
  if (!tail.empty() && (tail[0] == 'i' || tail[0] == 'I')) tail = tail.substr(1);
  if (!(tail.empty() || tail == "b" || tail == "B")) return "";
  return "did you mean " + std::string(s.substr(0, n)) + unit + "i?";
}

}  // namespace ktrain
