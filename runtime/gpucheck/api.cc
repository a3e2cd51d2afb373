#include "runtime/gpucheck/api.h"

#include <dlfcn.h>
#include <glob.h>

#include <initializer_list>

#include "runtime/gpu.h"

namespace ktrain::launch::gpucheck {
namespace {

// Looks up the first of `names` that the library has.
template <typename F>
bool bind(void* lib, F& fn, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names) {
    if (void* p = ::dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return true;
    }
  }
  missing = *names.begin();
  return false;
}

}  // namespace

bool CudaApi::load(std::string& error) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = ::dlerror();
    error = std::string("no NVIDIA driver found: libcuda.so.1 cannot be loaded (") +
            (why ? why : "unknown reason") + ")";
    return false;
  }
  std::string missing;
  bool ok = bind(lib, Init, {"cuInit"}, missing) &&
            bind(lib, DriverGetVersion, {"cuDriverGetVersion"}, missing) &&
            bind(lib, DeviceGetCount, {"cuDeviceGetCount"}, missing) &&
            bind(lib, DeviceGet, {"cuDeviceGet"}, missing) &&
            bind(lib, DeviceGetName, {"cuDeviceGetName"}, missing) &&
            bind(lib, DeviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
            bind(lib, DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
            bind(lib, DevicePrimaryCtxRelease,
                 {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, missing) &&
            bind(lib, CtxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
            bind(lib, CtxSynchronize, {"cuCtxSynchronize"}, missing) &&
            bind(lib, MemAlloc, {"cuMemAlloc_v2"}, missing) &&
            bind(lib, MemFree, {"cuMemFree_v2"}, missing) &&
            bind(lib, MemsetD32, {"cuMemsetD32_v2"}, missing) &&
            bind(lib, MemcpyDtoD, {"cuMemcpyDtoD_v2"}, missing) &&
            bind(lib, MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, missing) &&
            bind(lib, MemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing) &&
            bind(lib, StreamCreate, {"cuStreamCreate"}, missing) &&
            bind(lib, StreamSynchronize, {"cuStreamSynchronize"}, missing) &&
            bind(lib, StreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, missing) &&
            bind(lib, EventCreate, {"cuEventCreate"}, missing) &&
            bind(lib, EventRecord, {"cuEventRecord"}, missing) &&
            bind(lib, EventSynchronize, {"cuEventSynchronize"}, missing) &&
            bind(lib, EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
            bind(lib, EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, missing) &&
            bind(lib, GetErrorString, {"cuGetErrorString"}, missing);
  if (!ok) {
    error = "the NVIDIA driver's libcuda.so.1 lacks " + missing + " (driver too old?)";
    return false;
  }
  return true;
}

std::string CudaApi::describe(const char* call, CUresult r) const {
  const char* text = nullptr;
  if (GetErrorString) GetErrorString(r, &text);
  return std::string(call) + ": " + (text ? text : "CUDA error " + std::to_string(int(r)));
}

bool NcclApi::load(const std::map<std::string, std::string>& env, std::string& error) {
  std::string explicit_path;
  if (auto it = env.find("KTRAIN_NCCL_LIBRARY"); it != env.end() && !it->second.empty()) {
    explicit_path = it->second;
  }
  void* lib = nullptr;
  std::string tried;
  if (!explicit_path.empty()) {
    lib = ::dlopen(explicit_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    path = explicit_path;
    tried = explicit_path;
  } else {
    lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    path = "libnccl.so.2";
    tried = "the library path";
    for (const auto& pattern : nccl_search_patterns(env)) {
      if (lib) break;
      glob_t g{};
      if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !lib; ++i) {
          lib = ::dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL);
          if (lib) path = g.gl_pathv[i];
        }
      }
      ::globfree(&g);
      tried += ", " + pattern;
    }
  }
  if (!lib) {
    error = "NCCL not found: libnccl.so.2 is not in " + tried +
            " (install NCCL in the image, e.g. pip install nvidia-nccl-cu12)";
    return false;
  }
  std::string missing;
  bool ok = bind(lib, GetVersion, {"ncclGetVersion"}, missing) &&
            bind(lib, GetUniqueId, {"ncclGetUniqueId"}, missing) &&
            bind(lib, CommInitRank, {"ncclCommInitRank"}, missing) &&
            bind(lib, CommDestroy, {"ncclCommDestroy"}, missing) &&
            bind(lib, AllReduce, {"ncclAllReduce"}, missing) &&
            bind(lib, GroupStart, {"ncclGroupStart"}, missing) &&
            bind(lib, GroupEnd, {"ncclGroupEnd"}, missing) &&
            bind(lib, GetErrorString, {"ncclGetErrorString"}, missing);
  if (!ok) {
    error = path + " lacks " + missing;
    return false;
  }
  return true;
}

std::string NcclApi::describe(const char* call, ncclResult_t r) const {
  const char* text = GetErrorString ? GetErrorString(r) : nullptr;
  return std::string(call) + ": " + (text ? text : "NCCL error " + std::to_string(int(r)));
}

}  // namespace ktrain::launch::gpucheck
