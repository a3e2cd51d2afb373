#include "oci/tar.h"

#include <doctest/doctest.h>

#include <string>

using ktrain::oci::TarWriter;

namespace {

std::string field(const std::string& tar, size_t block, size_t off, size_t len) {
  std::string f = tar.substr(block * 512 + off, len);
  return f.substr(0, f.find('\0'));
}

unsigned checksum(const std::string& tar, size_t block) {
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) {
    unsigned char c = static_cast<unsigned char>(tar[block * 512 + i]);
    sum += (i >= 148 && i < 156) ? ' ' : c;
  }
  return sum;
}

}  // namespace

TEST_CASE("tar: entries have fixed owners and time, modes kept, valid checksums") {
  std::string out;
  TarWriter t([&](std::string_view d) { out.append(d); }, 1700000000);
  t.add_directory("workspace", 0755);
  t.add_file("workspace/a.sh", 0750, "echo hi\n");
  t.add_symlink("workspace/l", "a.sh");
  t.finish();
  // dir header, file header + 1 data block, link header, 2 zero blocks.
  REQUIRE(out.size() == 6 * 512);
  CHECK(field(out, 0, 0, 100) == "workspace/");
  CHECK(out[0 * 512 + 156] == '5');
  CHECK(field(out, 1, 0, 100) == "workspace/a.sh");
  CHECK(field(out, 1, 100, 8) == "0000750");
  CHECK(field(out, 1, 108, 8) == "0000000");       // uid
  CHECK(field(out, 1, 116, 8) == "0000000");       // gid
  CHECK(field(out, 1, 124, 12) == "00000000010");  // size 8
  CHECK(std::stoul(field(out, 1, 136, 12), nullptr, 8) == 1700000000u);
  CHECK(field(out, 1, 257, 6) == "ustar");
  CHECK(std::stoul(field(out, 1, 148, 7), nullptr, 8) == checksum(out, 1));
  CHECK(out.substr(2 * 512, 8) == "echo hi\n");
  CHECK(out[3 * 512 + 156] == '2');
  CHECK(field(out, 3, 157, 100) == "a.sh");
  CHECK(out.substr(4 * 512) == std::string(1024, '\0'));
}

TEST_CASE("tar: a long name gets a PAX header with the whole path") {
  std::string out;
  TarWriter t([&](std::string_view d) { out.append(d); }, 0);
  const std::string name = "workspace/" + std::string(150, 'n') + ".txt";
  t.add_file(name, 0644, "x");
  t.finish();
  CHECK(out[156] == 'x');
  const std::string record = "path=" + name + "\n";
  CHECK(out.find(record) != std::string::npos);
  // The real entry follows the PAX data.
  CHECK(out[2 * 512 + 156] == '0');
}

TEST_CASE("tar: the same input gives the same bytes") {
  auto make = [] {
    std::string out;
    TarWriter t([&](std::string_view d) { out.append(d); }, 42);
    t.add_file("a", 0644, "1");
    t.add_file("b/" + std::string(200, 'z'), 0600, "2");
    t.finish();
    return out;
  };
  CHECK(make() == make());
}

TEST_CASE("tar: setuid and setgid bits never go into a layer; the sticky bit stays") {
  std::string out;
  TarWriter t([&](std::string_view d) { out.append(d); }, 0);
  t.add_directory("shared", 03775);
  t.add_file("shared/su", 04755, "x");
  t.add_file("shared/sg", 02711, "y");
  t.finish();
  CHECK(field(out, 0, 100, 8) == "0001775");
  CHECK(field(out, 1, 100, 8) == "0000755");
  CHECK(field(out, 3, 100, 8) == "0000711");
  CHECK(std::stoul(field(out, 1, 148, 7), nullptr, 8) == checksum(out, 1));
}
