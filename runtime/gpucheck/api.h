#pragma once
// The CUDA driver and NCCL entry points the GPU helper uses, loaded at run time
// with dlopen/dlsym. cuda.h and nccl.h only provide the declarations.

#include <cuda.h>
#include <nccl.h>

#include <map>
#include <string>

namespace ktrain::launch::gpucheck {

/// The CUDA driver API (libcuda.so.1).
struct CudaApi {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemsetD32) MemsetD32 = nullptr;
  decltype(&::cuMemcpyDtoD) MemcpyDtoD = nullptr;
  decltype(&::cuMemcpyDtoDAsync) MemcpyDtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;

  /// Loads libcuda.so.1 and every entry point; on failure returns false and a
  /// plain reason in `error` ("no NVIDIA driver found: ...").
  bool load(std::string& error);
  /// "cuMemAlloc: out of memory" for a failed call.
  std::string describe(const char* call, CUresult r) const;
};

/// NCCL (libnccl.so.2).
struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) CommInitRank = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  std::string path;  ///< where the library was found

  /// Loads libnccl.so.2: the default search, then conda and pip's NVIDIA wheels.
  bool load(const std::map<std::string, std::string>& env, std::string& error);
  /// "ncclAllReduce: unhandled system error" for a failed call.
  std::string describe(const char* call, ncclResult_t r) const;
};

}  // namespace ktrain::launch::gpucheck
