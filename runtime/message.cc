#include "runtime/message.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "runtime/error.h"

namespace ktrain::launch {

Message& Message::set(const std::string& key, const std::string& value) {
  std::string v = value;
  for (char& c : v) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  fields.emplace_back(key, std::move(v));
  return *this;
}

const std::string* Message::find(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

const std::string& Message::get(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) {
    throw LaunchError(exit_status::kRendezvous,
                      "malformed '" + type + "' message: no field '" + std::string(key) + "'");
  }
  return *v;
}

bool parse_decimal(std::string_view text, long lo, long hi, long& out) {
  size_t i = text.size() > 0 && text[0] == '-' ? 1 : 0;
  if (i == text.size() || text.size() > 24) return false;
  for (size_t k = i; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return false;
  }
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || n < lo || n > hi) return false;
  out = n;
  return true;
}

long Message::get_int(std::string_view key, long lo, long hi) const {
  const std::string& v = get(key);
  long n = 0;
  if (!parse_decimal(v, lo, hi, n)) {
    std::string range = lo == LONG_MIN && hi == LONG_MAX
                            ? ""
                            : " in " + std::to_string(lo) + ".." + std::to_string(hi);
    throw LaunchError(exit_status::kRendezvous, "malformed '" + type + "' message: field '" +
                                                    std::string(key) + "' is not a number" + range +
                                                    ": '" + v + "'");
  }
  return n;
}

std::string encode_body(const Message& m) {
  std::string out = m.type;
  out += '\n';
  for (const auto& [k, v] : m.fields) {
    out += k;
    out += '=';
    out += v;
    out += '\n';
  }
  return out;
}

Message decode_body(std::string_view body) {
  Message m;
  size_t pos = body.find('\n');
  if (pos == std::string_view::npos || pos == 0) {
    throw LaunchError(exit_status::kRendezvous, "malformed message: no type line");
  }
  m.type = std::string(body.substr(0, pos));
  ++pos;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) {
      throw LaunchError(exit_status::kRendezvous,
                        "malformed '" + m.type + "' message: unterminated field");
    }
    std::string_view line = body.substr(pos, nl - pos);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw LaunchError(exit_status::kRendezvous,
                        "malformed '" + m.type + "' message: field without '='");
    }
    m.fields.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    pos = nl + 1;
  }
  return m;
}

std::string frame(const Message& m) {
  std::string body = encode_body(m);
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out;
  out.reserve(body.size() + 4);
  out += char(n >> 24);
  out += char(n >> 16);
  out += char(n >> 8);
  out += char(n);
  out += body;
  return out;
}

uint32_t FrameReader::length_at(size_t pos) const {
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos);
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

void FrameReader::scan() {
  while (!oversized_ && buf_.size() - scan_ >= 4) {
    uint32_t n = length_at(scan_);
    if (n > max_frame_) {
      oversized_ = true;
      return;
    }
    if (buf_.size() - scan_ - 4 < n) return;
    scan_ += 4 + size_t(n);
  }
}

void FrameReader::set_max_frame(uint32_t max_frame) {
  max_frame_ = max_frame;
  oversized_ = false;
  scan();
}

void FrameReader::feed(std::string_view bytes) {
  buf_.append(bytes);
  scan();
}

size_t FrameReader::room() const {
  if (oversized_) return 0;
  const size_t cap = 4 + size_t(max_frame_);
  if (pending() >= cap) return 0;
  const size_t partial = buf_.size() - scan_;  // of the frame after the complete ones
  size_t want = partial < 4 ? 4 - partial : 4 + size_t(length_at(scan_)) - partial;
  return std::min(want, cap - pending());
}

bool FrameReader::next(Message& out) {
  if (head_ == scan_) {
    if (oversized_) {
      throw LaunchError(exit_status::kRendezvous,
                        "oversized message (" + std::to_string(length_at(scan_)) +
                            " bytes, at most " + std::to_string(max_frame_) +
                            " allowed here): not a ktrain peer?");
    }
    return false;
  }
  const uint32_t n = length_at(head_);
  out = decode_body(std::string_view(buf_).substr(head_ + 4, n));
  head_ += 4 + size_t(n);
  if (head_ == buf_.size()) {
    buf_.clear();
    head_ = scan_ = 0;
  } else if (head_ >= 4096 && head_ * 2 >= buf_.size()) {
    buf_.erase(0, head_);
    scan_ -= head_;
    head_ = 0;
  }
  return true;
}

}  // namespace ktrain::launch
