#include "oci/blob_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"

namespace ktrain::oci {

namespace {

std::string random_suffix() {
  static const char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const unsigned v = rd();
    for (int j = 0; j < 4; ++j) s += kHex[(v >> (4 * j)) & 15];
  }
  return s;
}

}  // namespace

BlobFile::BlobFile(std::string path, std::string digest, std::uint64_t size, unsigned mode)
    : path_(std::move(path)), digest_(std::move(digest)), size_(size) {
  checked_digest(digest_, "writing '" + path_ + "'");
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = path_ + ".tmp-" + random_suffix();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 static_cast<mode_t>(mode));
    if (fd_ < 0 && (errno != EEXIST || attempt >= 8)) {
      throw Error("cannot create '" + temp_ + "': " + std::strerror(errno));
    }
  }
}

BlobFile::~BlobFile() {
  if (!committed_) discard();
}

void BlobFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void BlobFile::write(std::string_view data) {
  if (data.size() > size_ - written_) {
    throw Error("more than the " + std::to_string(size_) + " bytes that its descriptor gives came");
  }
  hash_.update(data);
  written_ += data.size();
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write '" + temp_ + "': " + std::strerror(errno));
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void BlobFile::commit(const std::string& what) {
  if (written_ != size_) {
    discard();
    throw Error(what + ": " + std::to_string(written_) + " bytes came, not the " +
                std::to_string(size_) + " that its descriptor gives");
  }
  const std::string got = hash_.finish();
  if (got != digest_) {
    discard();
    throw Error(what + ": the content does not match its digest (it is " + got + ")");
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    discard();
    throw Error("cannot write '" + temp_ + "': " + std::strerror(err));
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw Error("cannot rename '" + temp_ + "' to '" + path_ + "': " + std::strerror(err));
  }
  committed_ = true;
}

void download_blob_file(RegistryClient& client, const Repo& repo, const std::string& digest,
                        std::uint64_t size, const std::string& path, unsigned mode) {
  BlobFile out(path, digest, size, mode);
  client.download_blob(
      repo, digest, [&](std::string_view d) { out.write(d); }, static_cast<std::int64_t>(size));
  out.commit("downloading blob " + digest + " of " + repo.str());
}

void copy_blob_file(const std::string& from, const std::string& digest, std::uint64_t size,
                    const std::string& path, unsigned mode) {
  const std::string what = "copying blob " + digest + " from '" + from + "'";
  BlobFile out(path, digest, size, mode);
  const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(what + ": " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  try {
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error(std::strerror(errno));
      }
      if (n == 0) break;
      out.write(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    }
  } catch (const Error& e) {
    ::close(fd);
    throw e.wrapped(what);
  }
  ::close(fd);
  out.commit(what);
}

}  // namespace ktrain::oci
