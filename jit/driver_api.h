// The CUDA driver API, opened from libcuda.so.1 with dlopen on first use.
// Members are named after the API functions so that calls read like CUDA
// code: KILN_CU(driver, cuMemAlloc(&ptr, bytes)). Each is bound to the
// versioned symbol cuda.h maps that name to (see kDriverSymbols in
// driver_api.cc), e.g. cuMemAlloc -> cuMemAlloc_v2.
#ifndef KILN_JIT_DRIVER_API_H_
#define KILN_JIT_DRIVER_API_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "jit/cuda_types.h"
#include "jit/options.h"

namespace kiln::jit {

struct DriverApi {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;

  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;

  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph) = nullptr;

  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
  // Optional (CUDA 12.3 and later; null where the driver lacks them): what
  // graph replay with updated kernel nodes needs (CudaGraph::SetKernelNode).
  // cuStreamGetCaptureInfo_v3; the edge data is returned as an opaque pointer.
  CUresult (*cuStreamGetCaptureInfo)(CUstream stream, int* status, uint64_t* id, CUgraph* graph,
                                     const CUgraphNode** dependencies, const void** edge_data,
                                     size_t* count) = nullptr;
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec exec, CUgraphNode node,
                                             const CUkernelNodeParams* params) = nullptr;

  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count,
                              CUstream stream) = nullptr;

  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module,
                                  const char* name) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction function) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                             unsigned grid_z, unsigned block_x, unsigned block_y,
                             unsigned block_z, unsigned shared_bytes, CUstream stream,
                             void** params, void** extra) = nullptr;
  // A launch whose blocks are all resident at once (or an error): they may
  // wait for one another.
  CUresult (*cuLaunchCooperativeKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                                        unsigned grid_z, unsigned block_x, unsigned block_y,
                                        unsigned block_z, unsigned shared_bytes, CUstream stream,
                                        void** params) = nullptr;
  // A launch with attributes: kiln's ask that the kernel may start while the
  // kernel before it in the stream finishes (LaunchConfig::early).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig* config, CUfunction function, void** params,
                               void** extra) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction function,
                                                          int block_size, size_t dynamic_shared_bytes) = nullptr;
  // How many clusters of the launch `config` describes (its cluster
  // dimension attribute) the device holds at once.
  CUresult (*cuOccupancyMaxActiveClusters)(int* clusters, CUfunction function, const CUlaunchConfig* config) = nullptr;

  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end) = nullptr;

  std::string library;     // what was opened, e.g. "libcuda.so.1"
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// The driver, opened and initialized (cuInit) on the first call for these
// options and kept for the life of the process; later calls return the same
// table. Unavailable, with one message naming what was tried and that kiln
// falls back to the CPU, when the library is missing, lacks a symbol, or finds
// no usable GPU.
absl::StatusOr<const DriverApi*> LoadDriver(const LibraryOptions& options = {});

}  // namespace kiln::jit

#endif  // KILN_JIT_DRIVER_API_H_
