#include "runtime/error.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace ktrain::launch {

void config_error(const std::string& message) {
  throw LaunchError(exit_status::kConfig, message);
}

std::string errno_message(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

namespace {

// The length of the UTF-8 sequence at `s` (at most `n` bytes) of a code point from
// U+00A0 up, or 0 when there is none there.
size_t printable_utf8(const unsigned char* s, size_t n) {
  size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (len == 0 || s[0] > 0xf4 || len > n) return 0;
  uint32_t cp = s[0] & (0x7f >> len);
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return cp < 0xa0 ? 0 : len;  // U+0080..U+009F are the C1 controls
}

}  // namespace

std::string printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (size_t len = c >= 0x80 ? printable_utf8(p + i, text.size() - i) : 0; len > 0) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
    ++i;
  }
  return out;
}

void log_line(const std::string& message) {
  std::string line = "ktrain-launch: " + printable(message) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ktrain::launch
