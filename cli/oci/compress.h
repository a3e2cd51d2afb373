#pragma once
// Layer compression on every core: gzip as independent members (a valid gzip stream,
// as pigz --independent makes) or zstd with its own worker threads.

#include <memory>
#include <string_view>

#include "oci/tar.h"

namespace ktrain::oci {

/// How layers are compressed.
enum class Compression { kGzip, kZstd };

/// "gzip" or "zstd".
const char* compression_name(Compression c);

/// A streaming compressor: bytes in through write(), compressed bytes out to the sink
/// given at creation, in order. Memory stays bounded whatever the input size.
class Compressor {
 public:
  virtual ~Compressor() = default;
  /// Adds uncompressed bytes.
  virtual void write(std::string_view data) = 0;
  /// Flushes everything to the sink; nothing may be written afterwards.
  virtual void finish() = 0;
};

/// What makes gzip members. kAuto: ISA-L when libisal.so.2 is installed (several times
/// faster), else libdeflate. The two give different bytes (both valid gzip), each the
/// same for the same input.
enum class GzipEngine { kAuto, kIsal, kLibdeflate };

/// Whether `e` can be used here (ISA-L: whether libisal.so.2 loads).
bool gzip_engine_available(GzipEngine e);

/// A compressor for `c` writing to `sink`, using up to `threads` threads (0 = all cores,
/// up to 8). The output depends only on the input (and the gzip engine), never on the
/// number of threads. Asking for kIsal where it is not installed throws Error.
std::unique_ptr<Compressor> make_compressor(Compression c, ByteSink sink, unsigned threads = 0,
                                            GzipEngine engine = GzipEngine::kAuto);

}  // namespace ktrain::oci
