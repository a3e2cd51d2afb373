#include "oci/compress.h"

#include <libdeflate.h>
#include <zstd.h>

#include <deque>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "base/dynlib.h"
#include "base/error.h"

namespace ktrain::oci {

namespace {

constexpr size_t kGzipBlock = 1 << 20;  // input bytes per gzip member
// Level 1 (as go-containerregistry uses): several times faster than the default level
// for a modestly larger output; the upload, not the CPU, should bound a build.
// Members are made with libdeflate, which compresses a whole buffer at once two to
// three times faster than zlib's streaming deflate at the same level, and computes
// the CRC-32 with carry-less multiplication.
constexpr int kGzipLevel = 1;

/// A libdeflate compressor of one level.
class Deflater {
 public:
  explicit Deflater(int level) : c_(libdeflate_alloc_compressor(level)) {
    if (!c_) throw Error("gzip: cannot allocate a compressor");
  }
  ~Deflater() { libdeflate_free_compressor(c_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  libdeflate_compressor* get() const { return c_; }

 private:
  libdeflate_compressor* c_;
};

/// Whether `in` looks incompressible (random or already compressed data): its first
/// 64 KiB do not shrink by 3%. Such blocks are stored, which costs no CPU, instead of
/// being searched for matches that are not there. Depends only on the content.
bool incompressible(const std::string& in, const Deflater& fast) {
  constexpr size_t kProbe = 64 * 1024;
  if (in.size() < kProbe) return false;
  std::string out(kProbe * 97 / 100, '\0');
  // 0: the compressed probe does not fit in 97% of its size.
  return libdeflate_deflate_compress(fast.get(), in.data(), kProbe, out.data(), out.size()) == 0;
}

std::string gzip_member(const std::string& in) {
  Deflater fast(kGzipLevel);
  std::optional<Deflater> stored;
  const Deflater* d = &fast;
  if (incompressible(in, fast)) d = &stored.emplace(0);
  std::string out(libdeflate_gzip_compress_bound(d->get(), in.size()), '\0');
  const size_t n = libdeflate_gzip_compress(d->get(), in.data(), in.size(), out.data(), out.size());
  if (n == 0) throw Error("gzip: compression failed");
  out.resize(n);
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

/// libzstd, loaded when the first zstd layer is made rather than when ktrain starts
/// (gzip is the default; every other verb would pay for loading it).
struct ZstdLib {
  decltype(&ZSTD_createCCtx) create = nullptr;
  decltype(&ZSTD_freeCCtx) free = nullptr;
  decltype(&ZSTD_CCtx_setParameter) set = nullptr;
  decltype(&ZSTD_compressStream2) compress = nullptr;
  decltype(&ZSTD_CStreamOutSize) out_size = nullptr;
  decltype(&ZSTD_isError) is_error = nullptr;
  decltype(&ZSTD_getErrorName) error_name = nullptr;
};

const ZstdLib& zstd() {
  return load_library_once<ZstdLib>("libzstd.so.1",
                                    "needed for zstd layers: install libzstd1 (Debian/Ubuntu)",
                                    [](DynamicLibrary& dl, ZstdLib& l) {
                                      dl.bind(l.create, "ZSTD_createCCtx");
                                      dl.bind(l.free, "ZSTD_freeCCtx");
                                      dl.bind(l.set, "ZSTD_CCtx_setParameter");
                                      dl.bind(l.compress, "ZSTD_compressStream2");
                                      dl.bind(l.out_size, "ZSTD_CStreamOutSize");
                                      dl.bind(l.is_error, "ZSTD_isError");
                                      dl.bind(l.error_name, "ZSTD_getErrorName");
                                    });
}

class Zstd : public Compressor {
 public:
  Zstd(ByteSink sink, unsigned threads)
      : z_(zstd()), sink_(std::move(sink)), out_(z_.out_size(), '\0') {
    ctx_ = z_.create();
    z_.set(ctx_, ZSTD_c_compressionLevel, 3);
    z_.set(ctx_, ZSTD_c_checksumFlag, 1);
    // Worker threads; the output does not depend on their number (zstd guarantees it
    // for nbWorkers >= 1).
    z_.set(ctx_, ZSTD_c_nbWorkers, static_cast<int>(threads));
  }
  ~Zstd() override { z_.free(ctx_); }
  void write(std::string_view data) override { run(data, ZSTD_e_continue); }
  void finish() override { run({}, ZSTD_e_end); }

 private:
  void run(std::string_view data, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{out_.data(), out_.size(), 0};
      size_t left = z_.compress(ctx_, &o, &in, mode);
      if (z_.is_error(left)) throw Error(std::string("zstd: ") + z_.error_name(left));
      if (o.pos) sink_(std::string_view(out_.data(), o.pos));
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }

  const ZstdLib& z_;
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
