#include "runtime/gpucheck/checks.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/gpu.h"
#include "runtime/gpucheck/api.h"
#include "runtime/sha256.h"

namespace ktrain::launch::gpucheck {
namespace {

constexpr int kFailed = 77;

void say(const std::string& kind, const std::string& text) {
  std::printf("%s %s\n", kind.c_str(), text.c_str());
  std::fflush(stdout);
}

int fail(const std::string& text) {
  say("error", text);
  return kFailed;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double seconds_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Loads the driver and initializes it; returns false after printing the error.
bool start_driver(CudaApi& cu) {
  std::string error;
  if (!cu.load(error)) {
    say("error", error);
    return false;
  }
  CUresult r = cu.Init(0);
  if (r != CUDA_SUCCESS) {
    say("error", "no usable NVIDIA GPU: " + cu.describe("cuInit", r));
    return false;
  }
  return true;
}

// Peak memory bandwidth in GB/s from the memory clock (kHz) and bus width (bits).
double peak_gbps(const CudaApi& cu, CUdevice dev) {
  int clock_khz = 0, bus_bits = 0;
  cu.DeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
  cu.DeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

}  // namespace

int check_count() {
  CudaApi cu;
  if (!start_driver(cu)) return kFailed;
  int n = 0;
  CUresult r = cu.DeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return fail(cu.describe("cuDeviceGetCount", r));
  int version = 0;
  const bool have_version = cu.DriverGetVersion(&version) == CUDA_SUCCESS && version > 0;
  say("info", "driver CUDA " + std::to_string(version / 1000) + "." +
                  std::to_string(version % 1000 / 10) + ", " + std::to_string(n) + " GPU(s)");
  say("count", std::to_string(n));
  // For the launcher's check of the image's CUDA version (runtime/cuda_version.h).
  if (have_version) say("driver_cuda", std::to_string(version));
  return 0;
}

int check_quick(int gpus) {
  CudaApi cu;
  if (!start_driver(cu)) return kFailed;
  int n = 0;
  if (CUresult r = cu.DeviceGetCount(&n); r != CUDA_SUCCESS) {
    return fail(cu.describe("cuDeviceGetCount", r));
  }
  if (n < gpus) {
    return fail(std::to_string(gpus) + " GPUs requested but " + std::to_string(n) + " visible");
  }
  const size_t bytes = size_t(256) << 20;
  const int iterations = 20;
  for (int g = 0; g < gpus; ++g) {
    std::string where = "GPU " + std::to_string(g) + ": ";
    CUdevice dev;
    CUcontext ctx;
    char name[256] = {};
    CUdeviceptr a = 0, b = 0;
    CUevent e0 = nullptr, e1 = nullptr;
#define KTRAIN_CU(call, ...)                                                  \
  do {                                                                        \
    CUresult r_ = cu.call(__VA_ARGS__);                                       \
    if (r_ != CUDA_SUCCESS) return fail(where + cu.describe("cu" #call, r_)); \
  } while (0)
    KTRAIN_CU(DeviceGet, &dev, g);
    KTRAIN_CU(DeviceGetName, name, sizeof name - 1, dev);
    KTRAIN_CU(DevicePrimaryCtxRetain, &ctx, dev);
    KTRAIN_CU(CtxSetCurrent, ctx);
    KTRAIN_CU(MemAlloc, &a, bytes);
    KTRAIN_CU(MemAlloc, &b, bytes);
    const uint32_t pattern = 0x5a5a0000u + uint32_t(g);
    KTRAIN_CU(MemsetD32, a, pattern, bytes / 4);
    KTRAIN_CU(MemsetD32, b, 0, bytes / 4);
    KTRAIN_CU(MemcpyDtoD, b, a, bytes);  // warm-up
    KTRAIN_CU(EventCreate, &e0, CU_EVENT_DEFAULT);
    KTRAIN_CU(EventCreate, &e1, CU_EVENT_DEFAULT);
    KTRAIN_CU(EventRecord, e0, nullptr);
    for (int i = 0; i < iterations; ++i) KTRAIN_CU(MemcpyDtoDAsync, b, a, bytes, nullptr);
    KTRAIN_CU(EventRecord, e1, nullptr);
    KTRAIN_CU(EventSynchronize, e1);
    float ms = 0;
    KTRAIN_CU(EventElapsedTime, &ms, e0, e1);
    std::vector<uint32_t> host(1 << 18);
    const size_t probe = host.size() * 4;
    for (size_t off : {size_t(0), bytes / 2, bytes - probe}) {
      KTRAIN_CU(MemcpyDtoH, host.data(), b + off, probe);
      for (size_t i = 0; i < host.size(); ++i) {
        if (host[i] != pattern) {
          return fail(where + "device-to-device copy corrupted data at byte " +
                      std::to_string(off + 4 * i));
        }
      }
    }
    KTRAIN_CU(EventDestroy, e0);
    KTRAIN_CU(EventDestroy, e1);
    KTRAIN_CU(MemFree, a);
    KTRAIN_CU(MemFree, b);
    KTRAIN_CU(DevicePrimaryCtxRelease, dev);
#undef KTRAIN_CU
    // Read + write traffic, as CUDA's bandwidthTest counts a device-to-device copy.
    double gbps = ms > 0 ? 2.0 * double(bytes) * iterations / (ms / 1e3) / 1e9 : 0;
    double peak = peak_gbps(cu, dev);
    std::string line = where + name + ": alloc/copy/verify/free ok, device-to-device " +
                       fmt("%.1f", gbps) + " GB/s";
    if (peak > 0) {
      line += " of peak " + fmt("%.1f", peak) + " GB/s (" + fmt("%.0f", 100 * gbps / peak) + "%)";
    }
    say("info", line);
    say("d2d_gbps." + std::to_string(g), fmt("%.1f", gbps));
    say("peak_gbps." + std::to_string(g), fmt("%.1f", peak));
  }
  return 0;
}

int check_allreduce(const AllReduceOptions& o, const std::map<std::string, std::string>& env) {
  CudaApi cu;
  if (!start_driver(cu)) return kFailed;
  NcclApi nccl;
  std::string error;
  if (!nccl.load(env, error)) return fail(error);
  int version = 0;
  nccl.GetVersion(&version);
  say("info", "NCCL " + std::to_string(version) + " from " + nccl.path);

  ncclUniqueId id{};
  if (o.make_id) {
    if (ncclResult_t r = nccl.GetUniqueId(&id); r != ncclSuccess) {
      return fail(nccl.describe("ncclGetUniqueId", r));
    }
    say("nccl_id", to_hex(std::string_view(id.internal, sizeof id.internal)));
  } else {
    std::string bytes;
    if (!from_hex(o.id_hex, bytes) || bytes.size() != sizeof id.internal) {
      return fail("malformed NCCL unique id from node 0");
    }
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }

  const size_t sizes[] = {size_t(4) << 10, size_t(1) << 20, size_t(32) << 20, size_t(256) << 20};
  const size_t max_bytes = sizes[3];
  const int g_count = o.gpus;
  std::vector<CUdevice> devs(static_cast<size_t>(g_count));
  std::vector<CUcontext> ctxs(devs.size());
  std::vector<CUstream> streams(devs.size());
  std::vector<CUdeviceptr> send(devs.size()), recv(devs.size());
  std::vector<ncclComm_t> comms(devs.size());
  std::string where;
#define KTRAIN_CU(call, ...)                                                  \
  do {                                                                        \
    CUresult r_ = cu.call(__VA_ARGS__);                                       \
    if (r_ != CUDA_SUCCESS) return fail(where + cu.describe("cu" #call, r_)); \
  } while (0)
#define KTRAIN_NCCL(call, ...)                                                   \
  do {                                                                           \
    ncclResult_t r_ = nccl.call(__VA_ARGS__);                                    \
    if (r_ != ncclSuccess) return fail(where + nccl.describe("nccl" #call, r_)); \
  } while (0)
  for (int g = 0; g < g_count; ++g) {
    where = "GPU " + std::to_string(g) + ": ";
    auto i = static_cast<size_t>(g);
    KTRAIN_CU(DeviceGet, &devs[i], g);
    KTRAIN_CU(DevicePrimaryCtxRetain, &ctxs[i], devs[i]);
    KTRAIN_CU(CtxSetCurrent, ctxs[i]);
    KTRAIN_CU(StreamCreate, &streams[i], CU_STREAM_NON_BLOCKING);
    KTRAIN_CU(MemAlloc, &send[i], max_bytes);
    KTRAIN_CU(MemAlloc, &recv[i], max_bytes);
    KTRAIN_CU(MemsetD32, send[i], float_bits(float(o.first_rank + g + 1)), max_bytes / 4);
  }
  where = "";
  KTRAIN_NCCL(GroupStart);
  for (int g = 0; g < g_count; ++g) {
    auto i = static_cast<size_t>(g);
    KTRAIN_CU(CtxSetCurrent, ctxs[i]);
    KTRAIN_NCCL(CommInitRank, &comms[i], o.nranks, id, o.first_rank + g);
  }
  KTRAIN_NCCL(GroupEnd);
  say("info", "NCCL communicator of " + std::to_string(o.nranks) + " ranks ready (ranks " +
                  std::to_string(o.first_rank) + ".." + std::to_string(o.first_rank + g_count - 1) +
                  " here)");

  auto all_reduce = [&](size_t bytes) -> std::string {
    if (nccl.GroupStart() != ncclSuccess) return "ncclGroupStart failed";
    for (size_t i = 0; i < comms.size(); ++i) {
      cu.CtxSetCurrent(ctxs[i]);
      ncclResult_t r =
          nccl.AllReduce(reinterpret_cast<void*>(send[i]), reinterpret_cast<void*>(recv[i]),
                         bytes / 4, ncclFloat, ncclSum, comms[i], streams[i]);
      if (r != ncclSuccess) return nccl.describe("ncclAllReduce", r);
    }
    if (ncclResult_t r = nccl.GroupEnd(); r != ncclSuccess) return nccl.describe("ncclGroupEnd", r);
    for (size_t i = 0; i < comms.size(); ++i) {
      cu.CtxSetCurrent(ctxs[i]);
      if (CUresult r = cu.StreamSynchronize(streams[i]); r != CUDA_SUCCESS) {
        return cu.describe("cuStreamSynchronize", r);
      }
    }
    return "";
  };

  // n(n+1)/2: every rank r contributes r+1; exact in float for any real job size.
  const float expected = float(double(o.nranks) * (o.nranks + 1) / 2);
  say("info", "      size     time_us   algbw_GB/s   busbw_GB/s  check");
  double last_busbw = 0;
  std::vector<float> host;
  for (size_t bytes : sizes) {
    for (size_t i = 0; i < comms.size(); ++i) {
      cu.CtxSetCurrent(ctxs[i]);
      KTRAIN_CU(MemsetD32, recv[i], 0, max_bytes / 4);
    }
    for (int w = 0; w < 2; ++w) {  // warm-up
      if (auto e = all_reduce(bytes); !e.empty()) return fail(e);
    }
    const int iterations = bytes >= (size_t(32) << 20) ? 10 : 50;
    double t0 = seconds_now();
    for (int it = 0; it < iterations; ++it) {
      if (auto e = all_reduce(bytes); !e.empty()) return fail(e);
    }
    double seconds = (seconds_now() - t0) / iterations;
    double algbw = double(bytes) / seconds / 1e9;
    double busbw = allreduce_busbw(algbw, o.nranks);
    last_busbw = busbw;
    host.resize(bytes / 4);
    for (size_t i = 0; i < comms.size(); ++i) {
      where = "GPU " + std::to_string(i) + ": ";
      cu.CtxSetCurrent(ctxs[i]);
      KTRAIN_CU(MemcpyDtoH, host.data(), recv[i], bytes);
      for (size_t k = 0; k < host.size(); ++k) {
        if (host[k] != expected) {
          return fail(where + "NCCL all-reduce wrong result at " + std::to_string(bytes) +
                      " bytes: element " + std::to_string(k) + " is " + fmt("%g", double(host[k])) +
                      ", expected " + fmt("%g", double(expected)));
        }
      }
    }
    char row[160];
    std::snprintf(row, sizeof row, "%10zu  %10.1f   %10.2f   %10.2f  ok", bytes, seconds * 1e6,
                  algbw, busbw);
    say("info", row);
    say("busbw." + std::to_string(bytes), fmt("%.2f", busbw));
  }
  for (size_t i = 0; i < comms.size(); ++i) {
    nccl.CommDestroy(comms[i]);
    cu.CtxSetCurrent(ctxs[i]);
    cu.MemFree(send[i]);
    cu.MemFree(recv[i]);
    cu.StreamDestroy(streams[i]);
  }
#undef KTRAIN_CU
#undef KTRAIN_NCCL
  if (o.min_busbw > 0 && last_busbw < o.min_busbw) {
    return fail("NCCL all-reduce busbw " + fmt("%.2f", last_busbw) +
                " GB/s at 256 MiB is below KTRAIN_MIN_BUSBW " + fmt("%.2f", o.min_busbw) + " GB/s");
  }
  return 0;
}

}  // namespace ktrain::launch::gpucheck
