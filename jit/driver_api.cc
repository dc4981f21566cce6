#include "jit/driver_api.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_status.h"
#include "jit/dynamic_library.h"

namespace kiln::jit {
namespace {

constexpr absl::string_view kFallback = "kiln runs on the CPU instead";

// Binds every member to the symbol cuda.h (CUDA 13) maps its name to; the _v2
// entry points exist in every driver since CUDA 11.
std::vector<std::string> BindDriver(const DynamicLibrary& lib, DriverApi& api) {
  std::vector<std::string> missing;
  auto bind = [&](const char* symbol, auto*& fn) {
    if (!lib.Bind(symbol, fn)) missing.push_back(symbol);
  };
  bind("cuInit", api.cuInit);
  bind("cuDriverGetVersion", api.cuDriverGetVersion);
  bind("cuGetErrorName", api.cuGetErrorName);
  bind("cuGetErrorString", api.cuGetErrorString);
  bind("cuDeviceGetCount", api.cuDeviceGetCount);
  bind("cuDeviceGet", api.cuDeviceGet);
  bind("cuDeviceGetName", api.cuDeviceGetName);
  bind("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  bind("cuDeviceTotalMem_v2", api.cuDeviceTotalMem);
  bind("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  bind("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease);
  bind("cuCtxSetCurrent", api.cuCtxSetCurrent);
  bind("cuStreamCreate", api.cuStreamCreate);
  bind("cuStreamDestroy_v2", api.cuStreamDestroy);
  bind("cuStreamSynchronize", api.cuStreamSynchronize);
  bind("cuStreamBeginCapture_v2", api.cuStreamBeginCapture);
  bind("cuStreamEndCapture", api.cuStreamEndCapture);
  bind("cuGraphInstantiateWithFlags", api.cuGraphInstantiateWithFlags);
  bind("cuGraphLaunch", api.cuGraphLaunch);
  bind("cuGraphExecDestroy", api.cuGraphExecDestroy);
  bind("cuGraphDestroy", api.cuGraphDestroy);
  // Optional: without them decode steps are not replayed as graphs.
  lib.Bind("cuStreamGetCaptureInfo_v3", api.cuStreamGetCaptureInfo);
  lib.Bind("cuGraphExecKernelNodeSetParams_v2", api.cuGraphExecKernelNodeSetParams);
  bind("cuMemAlloc_v2", api.cuMemAlloc);
  bind("cuMemFree_v2", api.cuMemFree);
  bind("cuMemGetInfo_v2", api.cuMemGetInfo);
  bind("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync);
  bind("cuMemcpyDtoHAsync_v2", api.cuMemcpyDtoHAsync);
  bind("cuMemcpyDtoDAsync_v2", api.cuMemcpyDtoDAsync);
  bind("cuMemsetD8Async", api.cuMemsetD8Async);
  bind("cuModuleLoadData", api.cuModuleLoadData);
  bind("cuModuleUnload", api.cuModuleUnload);
  bind("cuModuleGetFunction", api.cuModuleGetFunction);
  bind("cuFuncGetAttribute", api.cuFuncGetAttribute);
  bind("cuFuncSetAttribute", api.cuFuncSetAttribute);
  bind("cuLaunchKernel", api.cuLaunchKernel);
  bind("cuLaunchCooperativeKernel", api.cuLaunchCooperativeKernel);
  bind("cuLaunchKernelEx", api.cuLaunchKernelEx);
  bind("cuOccupancyMaxActiveBlocksPerMultiprocessor", api.cuOccupancyMaxActiveBlocksPerMultiprocessor);
  bind("cuOccupancyMaxActiveClusters", api.cuOccupancyMaxActiveClusters);
  bind("cuEventCreate", api.cuEventCreate);
  bind("cuEventDestroy_v2", api.cuEventDestroy);
  bind("cuEventRecord", api.cuEventRecord);
  bind("cuEventSynchronize", api.cuEventSynchronize);
  // CUDA 12.8 added cuEventElapsedTime_v2 (what cuda.h 13 maps the name to);
  // older drivers only have the original, with the same signature.
  if (!lib.Bind("cuEventElapsedTime_v2", api.cuEventElapsedTime)) {
    bind("cuEventElapsedTime", api.cuEventElapsedTime);
  }
  return missing;
}

absl::StatusOr<const DriverApi*> Open(const LibraryOptions& options) {
  const std::vector<std::string> candidates =
      options.cuda_library.empty() ? std::vector<std::string>{"libcuda.so.1"}
                                   : std::vector<std::string>{options.cuda_library};
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::OpenFirst(candidates);
  if (!lib.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "no CUDA driver: ", lib.status().message(), "; ", kFallback,
        " (set KILN_CUDA_LIBRARY to the driver's path if it is installed elsewhere)"));
  }
  auto api = std::make_unique<DriverApi>();
  api->library = lib->name();
  const std::vector<std::string> missing = BindDriver(*lib, *api);
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "the CUDA driver ", api->library, " is too old: it lacks ", absl::StrJoin(missing, ", "),
        " (kiln needs a driver from CUDA 11 or newer); ", kFallback));
  }
  if (absl::Status status = KILN_CU(*api, cuInit(0)); !status.ok()) {
    return absl::UnavailableError(absl::StrCat("the CUDA driver ", api->library,
                                               " loaded, but ", status.message(), "; ",
                                               kFallback));
  }
  if (absl::Status status = KILN_CU(*api, cuDriverGetVersion(&api->driver_version));
      !status.ok()) {
    return absl::UnavailableError(absl::StrCat(status.message(), "; ", kFallback));
  }
  return api.release();  // kept for the life of the process, like the library
}

}  // namespace

absl::StatusOr<const DriverApi*> LoadDriver(const LibraryOptions& options) {
  // Failures are remembered too: probing for a missing driver on every
  // realize() would cost a dlopen each time and say the same thing.
  static absl::Mutex mu(absl::kConstInit);
  static auto* loaded = new absl::flat_hash_map<std::string, absl::StatusOr<const DriverApi*>>();
  absl::MutexLock lock(&mu);
  auto it = loaded->find(options.cuda_library);
  if (it == loaded->end()) it = loaded->emplace(options.cuda_library, Open(options)).first;
  return it->second;
}

}  // namespace kiln::jit
