#include "oci/compress.h"

#include <libdeflate.h>
#include <zstd.h>

#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

/// libdeflate compressors kept for reuse: a block takes one of the fast and, for a
/// stored block, one of level 0, and gives them back, so that a layer of hundreds of
/// blocks allocates a compressor per worker rather than per block.
class DeflaterPool {
 public:
  DeflaterPool() = default;
  DeflaterPool(const DeflaterPool&) = delete;
  DeflaterPool& operator=(const DeflaterPool&) = delete;
  ~DeflaterPool() {
    for (auto& free : free_) {
      for (libdeflate_compressor* c : free) libdeflate_free_compressor(c);
    }
  }

  /// A compressor of `level` (0 or kGzipLevel), given back when the lease ends.
  class Lease {
   public:
    Lease(DeflaterPool& pool, int level) : pool_(pool), slot_(level == 0 ? 0 : 1) {
      {
        std::lock_guard<std::mutex> g(pool_.mu_);
        auto& free = pool_.free_[slot_];
        if (!free.empty()) {
          c_ = free.back();
          free.pop_back();
        }
      }
      if (!c_) c_ = libdeflate_alloc_compressor(level);
      if (!c_) throw Error("gzip: cannot allocate a compressor");
    }
    ~Lease() {
      std::lock_guard<std::mutex> g(pool_.mu_);
      pool_.free_[slot_].push_back(c_);
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    libdeflate_compressor* get() const { return c_; }

   private:
    DeflaterPool& pool_;
    int slot_;
    libdeflate_compressor* c_ = nullptr;
  };

 private:
  std::mutex mu_;
  std::vector<libdeflate_compressor*> free_[2];  // level 0, kGzipLevel
};

/// Bytes made by a worker: not a std::string, whose size would be zero-filled first.
struct Bytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

/// Whether `in` looks incompressible (random or already compressed data): its first
/// 64 KiB do not shrink by 3%. Such blocks are stored, which costs no CPU, instead of
/// being searched for matches that are not there. Depends only on the content.
bool incompressible(const std::string& in, libdeflate_compressor* fast) {
  constexpr size_t kProbe = 64 * 1024;
  if (in.size() < kProbe) return false;
  constexpr size_t kRoom = kProbe * 97 / 100;
  std::unique_ptr<char[]> out(new char[kRoom]);
  // 0: the compressed probe does not fit in 97% of its size.
  return libdeflate_deflate_compress(fast, in.data(), kProbe, out.get(), kRoom) == 0;
}

Bytes gzip_member(DeflaterPool& pool, const std::string& in) {
  DeflaterPool::Lease fast(pool, kGzipLevel);
  std::optional<DeflaterPool::Lease> stored;
  libdeflate_compressor* d = fast.get();
  if (incompressible(in, d)) d = stored.emplace(pool, 0).get();
  Bytes out;
  const size_t bound = libdeflate_gzip_compress_bound(d, in.size());
  out.data.reset(new char[bound]);
  out.size = libdeflate_gzip_compress(d, in.data(), in.size(), out.data.get(), bound);
  if (out.size == 0) throw Error("gzip: compression failed");
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
  ~ParallelGzip() override {
    // The workers use the pool: wait for them (their results are dropped).
    for (auto& f : pending_) {
      if (f.valid()) f.wait();
    }
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
    pending_.push_back(std::async(
        std::launch::async, [this](std::string block) { return gzip_member(pool_, block); },
        std::move(block_)));
    block_ = std::string();
    block_.reserve(kGzipBlock);
  }
  void drain_one() {
    Bytes out = pending_.front().get();
    pending_.pop_front();
    sink_(std::string_view(out.data.get(), out.size));
  }

  ByteSink sink_;
  unsigned threads_;
  DeflaterPool pool_;
  std::string block_;
  std::deque<std::future<Bytes>> pending_;
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
