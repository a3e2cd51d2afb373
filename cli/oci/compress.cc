#include "oci/compress.h"

#include <zlib.h>
#include <zstd.h>

#include <deque>
#include <future>
#include <string>
#include <thread>

#include "base/error.h"

namespace ktrain::oci {

namespace {

constexpr size_t kGzipBlock = 1 << 20;  // input bytes per gzip member
// Level 1 (as go-containerregistry uses): several times faster than the default level
// for a modestly larger output; the upload, not the CPU, should bound a build.
constexpr int kGzipLevel = 1;

/// Whether `in` looks incompressible (random or already compressed data): its first
/// 64 KiB shrink by less than 3%. Such blocks are stored, which costs no CPU, instead
/// of being searched for matches that are not there. Depends only on the content.
bool incompressible(const std::string& in) {
  constexpr size_t kProbe = 64 * 1024;
  if (in.size() < kProbe) return false;
  uLongf out_len = compressBound(kProbe);
  std::string out(out_len, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &out_len,
                reinterpret_cast<const Bytef*>(in.data()), kProbe, 1) != Z_OK) {
    return false;
  }
  return out_len > kProbe * 97 / 100;
}

std::string gzip_member(const std::string& in) {
  z_stream z{};
  const int level = incompressible(in) ? 0 : kGzipLevel;
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error("gzip: cannot initialise zlib");
  }
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error("gzip: compression failed");
  return out;
}

/// Splits the input into fixed blocks and compresses each as its own gzip member on a
/// worker; members are written in input order. Concatenated members form one valid
/// gzip stream (RFC 1952, section 2.2) that every gzip reader decompresses whole.
class ParallelGzip : public Compressor {
 public:
  ParallelGzip(ByteSink sink, unsigned threads) : sink_(std::move(sink)), threads_(threads) {
    block_.reserve(kGzipBlock);
  }
  void write(std::string_view data) override {
    while (!data.empty()) {
      size_t n = std::min(data.size(), kGzipBlock - block_.size());
      block_.append(data.substr(0, n));
      data.remove_prefix(n);
      if (block_.size() == kGzipBlock) submit();
    }
  }
  void finish() override {
    if (!block_.empty() || !any_) submit();
    while (!pending_.empty()) drain_one();
  }

 private:
  void submit() {
    any_ = true;
    while (pending_.size() >= 2 * threads_) drain_one();
    pending_.push_back(std::async(std::launch::async, gzip_member, std::move(block_)));
    block_ = std::string();
    block_.reserve(kGzipBlock);
  }
  void drain_one() {
    std::string out = pending_.front().get();
    pending_.pop_front();
    sink_(out);
  }

  ByteSink sink_;
  unsigned threads_;
  std::string block_;
  std::deque<std::future<std::string>> pending_;
  bool any_ = false;
};

class Zstd : public Compressor {
 public:
  Zstd(ByteSink sink, unsigned threads)
      : sink_(std::move(sink)), out_(ZSTD_CStreamOutSize(), '\0') {
    ctx_ = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, 1);
    // Worker threads; the output does not depend on their number (zstd guarantees it
    // for nbWorkers >= 1).
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_nbWorkers, static_cast<int>(threads));
  }
  ~Zstd() override { ZSTD_freeCCtx(ctx_); }
  void write(std::string_view data) override { run(data, ZSTD_e_continue); }
  void finish() override { run({}, ZSTD_e_end); }

 private:
  void run(std::string_view data, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{out_.data(), out_.size(), 0};
      size_t left = ZSTD_compressStream2(ctx_, &o, &in, mode);
      if (ZSTD_isError(left)) throw Error(std::string("zstd: ") + ZSTD_getErrorName(left));
      if (o.pos) sink_(std::string_view(out_.data(), o.pos));
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }

  ByteSink sink_;
  ZSTD_CCtx* ctx_ = nullptr;
  std::string out_;
};

}  // namespace

const char* compression_name(Compression c) {
  return c == Compression::kZstd ? "zstd" : "gzip";
}

std::unique_ptr<Compressor> make_compressor(Compression c, ByteSink sink, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (c == Compression::kZstd) return std::make_unique<Zstd>(std::move(sink), threads);
  return std::make_unique<ParallelGzip>(std::move(sink), threads);
}

}  // namespace ktrain::oci
