#include "backend/log_line.h"

namespace ktrain::backend {

void mark_cut_line(std::string& head) {
  if (head.size() > kMaxLogLineBytes) head.resize(kMaxLogLineBytes);
  // The last character may have lost bytes: find where it begins, and drop it if its
  // lead byte announces more bytes than are left.
  std::size_t lead = head.size();
  while (lead > 0 && head.size() - lead < 4 &&
         (static_cast<unsigned char>(head[lead - 1]) & 0xC0) == 0x80) {
    --lead;
  }
  if (lead > 0) {
    const auto c = static_cast<unsigned char>(head[lead - 1]);
    const std::size_t length = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (head.size() - (lead - 1) < length) head.resize(lead - 1);
  }
  head += kLineCutMark;
}

std::string_view cut_long_line(std::string_view line, std::string& storage) {
  if (line.size() <= kMaxLogLineBytes) return line;
  storage.assign(line.substr(0, kMaxLogLineBytes));
  mark_cut_line(storage);
  return storage;
}

}  // namespace ktrain::backend
