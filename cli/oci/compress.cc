#include "oci/compress.h"

#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
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
constexpr int kGzipLevel = 1;
// Compression threads when the caller leaves it to us. The layer's bytes are read and
// hashed (SHA-256, ~1.4 GB/s) on one thread; 8 workers compress faster than that.
constexpr unsigned kMaxAutoThreads = 8;
// A block whose first kProbe bytes do not compress into kProbeRoom is stored.
constexpr size_t kProbe = 64 * 1024;
constexpr size_t kProbeRoom = kProbe * 97 / 100;

/// ISA-L's deflate (libisal.so.2), loaded with the first gzip layer. Its level 1 is
/// written in assembly and compresses two to five times faster than libdeflate's level
/// 1 (which is itself two to three times faster than zlib's), for an output some 5-10%
/// larger. Absent, libdeflate makes the members.
struct IsalLib {
  decltype(&isal_deflate_stateless_init) init = nullptr;
  decltype(&isal_deflate_stateless) deflate = nullptr;
};

const IsalLib* isal() {
  static const IsalLib* lib = []() -> const IsalLib* {
    try {
      return &load_library_once<IsalLib>("libisal.so.2", "install libisal2 (Debian/Ubuntu)",
                                         [](DynamicLibrary& dl, IsalLib& l) {
                                           dl.bind(l.init, "isal_deflate_stateless_init");
                                           dl.bind(l.deflate, "isal_deflate_stateless");
                                         });
    } catch (const Error&) {
      return nullptr;
    }
  }();
  return lib;
}

GzipEngine resolve(GzipEngine e) {
  if (e == GzipEngine::kAuto) return isal() ? GzipEngine::kIsal : GzipEngine::kLibdeflate;
  if (e == GzipEngine::kIsal && !isal()) {
    throw Error("gzip: ISA-L (libisal.so.2) is not installed: install libisal2 (Debian/Ubuntu)");
  }
  return e;
}

/// What one worker compresses with, made when first needed and kept for reuse: a
/// layer of hundreds of blocks allocates these once per worker rather than per block.
struct Deflater {
  Deflater() = default;
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  ~Deflater() {
    if (fast) libdeflate_free_compressor(fast);
    if (stored) libdeflate_free_compressor(stored);
  }
  libdeflate_compressor* fast = nullptr;           // libdeflate, kGzipLevel
  libdeflate_compressor* stored = nullptr;         // libdeflate, level 0 (stored blocks)
  std::unique_ptr<isal_zstream> isal_state;        // ~80 KiB
  std::unique_ptr<std::uint8_t[]> isal_level_buf;  // ISAL_DEF_LVL1_DEFAULT bytes
  std::unique_ptr<char[]> probe_out;               // kProbeRoom bytes

  libdeflate_compressor* libdeflate(int level) {
    libdeflate_compressor*& c = level == 0 ? stored : fast;
    if (!c) c = libdeflate_alloc_compressor(level);
    if (!c) throw Error("gzip: cannot allocate a compressor");
    return c;
  }
  /// ISA-L level 1 from `in` into `out`: the bytes written, or 0 when they do not fit.
  /// `gzip`: a whole gzip member, else raw deflate.
  size_t isal_compress(std::string_view in, char* out, size_t room, bool gzip) {
    const IsalLib& lib = *isal();
    if (!isal_state) {
      isal_state = std::make_unique<isal_zstream>();
      isal_level_buf.reset(new std::uint8_t[ISAL_DEF_LVL1_DEFAULT]);
    }
    isal_zstream& z = *isal_state;
    lib.init(&z);
    z.level = kGzipLevel;
    // The level buffer's size shapes the blocks, so it is fixed: the same input always
    // gives the same bytes.
    z.level_buf = isal_level_buf.get();
    z.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    z.gzip_flag = gzip ? IGZIP_GZIP : IGZIP_DEFLATE;
    z.end_of_stream = 1;
    z.flush = NO_FLUSH;
    z.next_in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<std::uint32_t>(in.size());
    z.next_out = reinterpret_cast<std::uint8_t*>(out);
    z.avail_out = static_cast<std::uint32_t>(room);
    const int rc = lib.deflate(&z);
    if (rc == STATELESS_OVERFLOW) return 0;
    if (rc != COMP_OK) throw Error("gzip: ISA-L failed (" + std::to_string(rc) + ")");
    return z.total_out;
  }
};

class DeflaterPool {
 public:
  /// A deflater, given back when the lease ends.
  class Lease {
   public:
    explicit Lease(DeflaterPool& pool) : pool_(pool) {
      {
        std::lock_guard<std::mutex> g(pool_.mu_);
        if (!pool_.free_.empty()) {
          d_ = std::move(pool_.free_.back());
          pool_.free_.pop_back();
        }
      }
      if (!d_) d_ = std::make_unique<Deflater>();
    }
    ~Lease() {
      std::lock_guard<std::mutex> g(pool_.mu_);
      pool_.free_.push_back(std::move(d_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Deflater& operator*() const { return *d_; }

   private:
    DeflaterPool& pool_;
    std::unique_ptr<Deflater> d_;
  };

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Deflater>> free_;
};

/// Bytes made by a worker: not a std::string, whose size would be zero-filled first.
struct Bytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

/// Whether `in` looks incompressible (random or already compressed data): its first
/// 64 KiB do not shrink by 3%. Such blocks are stored, which costs no CPU, instead of
/// being searched for matches that are not there. Depends only on the content.
bool incompressible(std::string_view in, Deflater& d, GzipEngine engine) {
  if (in.size() < kProbe) return false;
  if (!d.probe_out) d.probe_out.reset(new char[kProbeRoom]);
  // 0: the compressed probe does not fit in 97% of its size.
  if (engine == GzipEngine::kIsal) {
    return d.isal_compress(in.substr(0, kProbe), d.probe_out.get(), kProbeRoom, false) == 0;
  }
  return libdeflate_deflate_compress(d.libdeflate(kGzipLevel), in.data(), kProbe, d.probe_out.get(),
                                     kProbeRoom) == 0;
}

/// `in` as one gzip member: stored blocks made by libdeflate.
Bytes stored_member(Deflater& d, std::string_view in) {
  libdeflate_compressor* c = d.libdeflate(0);
  Bytes out;
  const size_t bound = libdeflate_gzip_compress_bound(c, in.size());
  out.data.reset(new char[bound]);
  out.size = libdeflate_gzip_compress(c, in.data(), in.size(), out.data.get(), bound);
  if (out.size == 0) throw Error("gzip: compression failed");
  return out;
}

Bytes gzip_member(DeflaterPool& pool, GzipEngine engine, const std::string& in) {
  DeflaterPool::Lease lease(pool);
  Deflater& d = *lease;
  if (incompressible(in, d, engine)) return stored_member(d, in);
  Bytes out;
  if (engine == GzipEngine::kIsal) {
    // Given room for stored blocks (5 bytes per 64 KiB, 18 per member), ISA-L stores
    // what does not compress (data that turns random after the probe); should a member
    // still not fit, libdeflate stores it.
    const size_t room = in.size() + in.size() / 16 + 1024;
    out.data.reset(new char[room]);
    out.size = d.isal_compress(in, out.data.get(), room, true);
    if (out.size == 0) return stored_member(d, in);
    return out;
  }
  libdeflate_compressor* c = d.libdeflate(kGzipLevel);
  const size_t bound = libdeflate_gzip_compress_bound(c, in.size());
  out.data.reset(new char[bound]);
  out.size = libdeflate_gzip_compress(c, in.data(), in.size(), out.data.get(), bound);
  if (out.size == 0) throw Error("gzip: compression failed");
  return out;
}

/// Splits the input into fixed blocks and compresses each as its own gzip member on a
/// worker; members are written in input order. Concatenated members form one valid
/// gzip stream (RFC 1952, section 2.2) that every gzip reader decompresses whole.
class ParallelGzip : public Compressor {
 public:
  ParallelGzip(ByteSink sink, unsigned threads, GzipEngine engine)
      : sink_(std::move(sink)), threads_(threads), engine_(resolve(engine)) {
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
    // A block or two beyond one per worker, so that workers stay busy while the
    // oldest block is waited for; each in flight holds up to ~2.5 MiB.
    while (pending_.size() >= threads_ + 2) drain_one();
    pending_.push_back(std::async(
        std::launch::async,
        [this](std::string block) { return gzip_member(pool_, engine_, block); },
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
  GzipEngine engine_;
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

bool gzip_engine_available(GzipEngine e) {
  return e != GzipEngine::kIsal || isal() != nullptr;
}

std::unique_ptr<Compressor> make_compressor(Compression c, ByteSink sink, unsigned threads,
                                            GzipEngine engine) {
  if (threads == 0) {
    // All cores, up to kMaxAutoThreads: more would hold more blocks in memory without
    // going faster, as the layer is read, hashed and written on one thread.
    threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxAutoThreads);
  }
  if (c == Compression::kZstd) return std::make_unique<Zstd>(std::move(sink), threads);
  return std::make_unique<ParallelGzip>(std::move(sink), threads, engine);
}

}  // namespace ktrain::oci
