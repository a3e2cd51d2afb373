#include "runtime/message.h"

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

long Message::get_int(std::string_view key) const {
  const std::string& v = get(key);
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') {
    throw LaunchError(exit_status::kRendezvous, "malformed '" + type + "' message: field '" +
                                                    std::string(key) + "' is not a number: '" + v +
                                                    "'");
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

bool FrameReader::next(Message& out) {
  if (buf_.size() < 4) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data());
  uint32_t n = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
  if (n > kMaxFrame) {
    throw LaunchError(exit_status::kRendezvous,
                      "oversized message (" + std::to_string(n) + " bytes): not a ktrain peer?");
  }
  if (buf_.size() < 4 + size_t(n)) return false;
  out = decode_body(std::string_view(buf_).substr(4, n));
  buf_.erase(0, 4 + size_t(n));
  return true;
}

}  // namespace ktrain::launch
