// Fuzzes a followed log stream as `ktrain logs --follow` cuts it: lines framed across
// chunks of any size (LineFramer), the kubelet's timestamp in front of each
// (TimestampParser), the overlap of a resumed stream dropped (LineDedup), and the
// UTF-8-safe cut of a long line (mark_cut_line).
//
// Input: the stream, then optionally "\n----\n" and chunk sizes (one byte each); a
// chunk size byte with its top bit set also starts a new connection before it.
// Expected: nothing thrown.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/kube_follow.h"
#include "backend/log_line.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = ktrain::fuzz::split_parts(data, size, 2);
  ktrain::backend::TimestampParser timestamps;
  ktrain::backend::LineDedup dedup;
  ktrain::backend::LineFramer framer;
  size_t delivered = 0;
  auto handle_line = [&](std::string_view raw) {
    const auto sp = raw.find(' ');
    std::optional<std::int64_t> ts;
    if (sp != std::string_view::npos && sp >= 20) ts = timestamps.parse(raw.substr(0, sp));
    if (ts && !dedup.accept(*ts)) return true;
    std::string cut(raw.substr(0, 64));
    ktrain::backend::mark_cut_line(cut);
    delivered += cut.size();
    return true;
  };
  size_t i = 0;
  const std::string& sizes = parts[1];
  for (auto chunk : ktrain::fuzz::chunks(parts[0], sizes)) {
    if (!sizes.empty() && (static_cast<unsigned char>(sizes[i++ % sizes.size()]) & 0x80)) {
      // A dropped connection: what is left of a line is lost, the next one resumes.
      framer = ktrain::backend::LineFramer();
      dedup.reconnect();
    }
    framer.feed(chunk, handle_line);
  }
  if (!framer.rest().empty()) handle_line(framer.rest());
  return 0;
}
