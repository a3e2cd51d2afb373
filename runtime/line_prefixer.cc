#include "runtime/line_prefixer.h"

namespace ktrain::launch {

void LinePrefixer::feed(std::string_view data, std::string& out) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      // No end of line: hold it back, writing full pieces when it grows too long.
      while (partial_.size() + data.size() >= cap_) {
        size_t take = cap_ - partial_.size();
        out += prefix_;
        out += partial_;
        out += data.substr(0, take);
        out += kContinuationMark;
        out += '\n';
        partial_.clear();
        data.remove_prefix(take);
      }
      partial_.append(data);
      return;
    }
    std::string_view piece = data.substr(0, nl);
    while (partial_.size() + piece.size() > cap_) {
      size_t take = cap_ - partial_.size();
      out += prefix_;
      out += partial_;
      out += piece.substr(0, take);
      out += kContinuationMark;
      out += '\n';
      partial_.clear();
      piece.remove_prefix(take);
    }
    out += prefix_;
    out += partial_;
    out += piece;
    out += '\n';
    partial_.clear();
    data.remove_prefix(nl + 1);
  }
}

void LinePrefixer::flush(std::string& out) {
  if (partial_.empty()) return;
  out += prefix_;
  out += partial_;
  out += '\n';
  partial_.clear();
}

}  // namespace ktrain::launch
