#include "oci/tar.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace ktrain::oci {

namespace {

constexpr size_t kBlock = 512;

/// Writes `value` as a zero-padded octal field of `width` bytes (with a NUL at the end).
bool put_octal(char* field, size_t width, std::uint64_t value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (value & 7)));
    value >>= 3;
  } while (value);
  if (digits.size() > width - 1) return false;
  std::string out(width - 1 - digits.size(), '0');
  out += digits;
  std::memcpy(field, out.data(), out.size());
  field[width - 1] = '\0';
  return true;
}

/// One "len key=value\n" PAX record (the length counts itself).
std::string pax_record(const std::string& key, const std::string& value) {
  size_t body = key.size() + value.size() + 3;  // ' ' '=' '\n'
  size_t len = body + std::to_string(body).size();
  if (std::to_string(len).size() != std::to_string(body).size()) ++len;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

}  // namespace

TarWriter::TarWriter(ByteSink sink, std::int64_t mtime) : sink_(std::move(sink)), mtime_(mtime) {}

void TarWriter::pad(std::uint64_t size) {
  static const char kZeros[kBlock] = {};
  size_t rem = size % kBlock;
  if (rem) sink_(std::string_view(kZeros, kBlock - rem));
}

void TarWriter::header(const std::string& path, char type, std::uint32_t mode, std::uint64_t size,
                       const std::string& link) {
  std::string pax;
  std::string name = path;
  if (name.size() > 100) pax += pax_record("path", path);
  if (link.size() > 100) pax += pax_record("linkpath", link);
  if (size > 077777777777ULL) pax += pax_record("size", std::to_string(size));
  if (!pax.empty()) {
    // A PAX extended header entry before the real one; its own name is fixed so that
    // output does not depend on anything but the entry.
    std::string pax_name = "PaxHeaders/" + path.substr(0, 80);
    header(pax_name.substr(0, 99), 'x', 0644, pax.size(), "");
    sink_(pax);
    pad(pax.size());
    if (name.size() > 100) name = name.substr(0, 100);
  }
  char h[kBlock] = {};
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  // No setuid or setgid bit goes into an image: a workspace file that has one would
  // run as its owner (root, 0:0) in the container. The sticky bit stays.
  put_octal(h + 100, 8, mode & 01777);
  put_octal(h + 108, 8, 0);                                      // uid
  put_octal(h + 116, 8, 0);                                      // gid
  if (!put_octal(h + 124, 12, size)) put_octal(h + 124, 12, 0);  // real size in the PAX header
  put_octal(h + 136, 12, static_cast<std::uint64_t>(mtime_ < 0 ? 0 : mtime_));
  std::memset(h + 148, ' ', 8);  // checksum placeholder
  h[156] = type;
  std::memcpy(h + 157, link.data(), std::min<size_t>(link.size(), 100));
  std::memcpy(h + 257, "ustar", 6);  // magic "ustar\0"
  std::memcpy(h + 263, "00", 2);     // version
  put_octal(h + 329, 8, 0);          // devmajor
  put_octal(h + 337, 8, 0);          // devminor
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += static_cast<unsigned char>(h[i]);
  put_octal(h + 148, 7, sum);
  h[155] = ' ';
  sink_(std::string_view(h, kBlock));
}

void TarWriter::add_directory(const std::string& path, std::uint32_t mode) {
  std::string p = path;
  if (p.empty() || p.back() != '/') p += '/';
  header(p, '5', mode, 0, "");
}

void TarWriter::add_file(const std::string& path, std::uint32_t mode, std::string_view content) {
  header(path, '0', mode, content.size(), "");
  sink_(content);
  pad(content.size());
}

void TarWriter::add_file_from_fd(const std::string& path, std::uint32_t mode, std::uint64_t size,
                                 int fd) {
  header(path, '0', mode, size, "");
  std::vector<char> buf(1 << 20);
  std::uint64_t left = size;
  while (left > 0) {
    ssize_t n =
        ::read(fd, buf.data(), static_cast<size_t>(std::min<std::uint64_t>(left, buf.size())));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("reading '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) throw Error("'" + path + "' became shorter while it was being read; try again");
    sink_(std::string_view(buf.data(), static_cast<size_t>(n)));
    left -= static_cast<std::uint64_t>(n);
  }
  pad(size);
}

void TarWriter::add_symlink(const std::string& path, const std::string& target) {
  header(path, '2', 0777, 0, target);
}

void TarWriter::finish() {
  static const char kZeros[2 * kBlock] = {};
  sink_(std::string_view(kZeros, sizeof kZeros));
}

}  // namespace ktrain::oci
