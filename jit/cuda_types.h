// The few CUDA driver and NVRTC types and constants kiln uses, declared here
// instead of including cuda.h / nvrtc.h: the libraries are opened with dlopen
// at run time (jit/driver_api.h, jit/nvrtc_api.h), so kiln builds and starts
// where neither the toolkit nor a GPU is present.
//
// ABI targeted: the CUDA driver API as of CUDA 12/13 with the "_v2" entry
// points (cuMemAlloc_v2, cuMemcpyHtoDAsync_v2, cuDevicePrimaryCtxRelease_v2,
// ...), which every driver since CUDA 11 exports, and NVRTC 12 or 13. The
// numbers below were copied from /usr/local/cuda/include/cuda.h (CUDA_VERSION
// 13000) and nvrtc.h; NVIDIA keeps them stable across releases.
#ifndef KILN_JIT_CUDA_TYPES_H_
#define KILN_JIT_CUDA_TYPES_H_

#include <cstdint>

namespace kiln::jit {

// Driver API handles.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;  // CUdeviceptr_v2: unsigned long long on 64-bit hosts
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUkernel = struct CUkern_st*;

// NVRTC handles.
using nvrtcResult = int;
using nvrtcProgram = struct NvrtcProgramOpaque*;

// CUresult values kiln distinguishes (everything else is reported by name).
inline constexpr CUresult kCudaSuccess = 0;                        // CUDA_SUCCESS
inline constexpr CUresult kCudaErrorInvalidValue = 1;              // CUDA_ERROR_INVALID_VALUE
inline constexpr CUresult kCudaErrorOutOfMemory = 2;               // CUDA_ERROR_OUT_OF_MEMORY
inline constexpr CUresult kCudaErrorNotInitialized = 3;            // CUDA_ERROR_NOT_INITIALIZED
inline constexpr CUresult kCudaErrorDeinitialized = 4;             // CUDA_ERROR_DEINITIALIZED
inline constexpr CUresult kCudaErrorStubLibrary = 34;              // CUDA_ERROR_STUB_LIBRARY
inline constexpr CUresult kCudaErrorDeviceUnavailable = 46;        // CUDA_ERROR_DEVICE_UNAVAILABLE
inline constexpr CUresult kCudaErrorNoDevice = 100;                // CUDA_ERROR_NO_DEVICE
inline constexpr CUresult kCudaErrorInvalidDevice = 101;           // CUDA_ERROR_INVALID_DEVICE
inline constexpr CUresult kCudaErrorInvalidImage = 200;            // CUDA_ERROR_INVALID_IMAGE
inline constexpr CUresult kCudaErrorNoBinaryForGpu = 209;          // CUDA_ERROR_NO_BINARY_FOR_GPU
inline constexpr CUresult kCudaErrorInvalidPtx = 218;              // CUDA_ERROR_INVALID_PTX
inline constexpr CUresult kCudaErrorUnsupportedPtxVersion = 222;   // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
inline constexpr CUresult kCudaErrorNotFound = 500;                // CUDA_ERROR_NOT_FOUND
inline constexpr CUresult kCudaErrorLaunchOutOfResources = 701;    // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
inline constexpr CUresult kCudaErrorSystemNotReady = 802;          // CUDA_ERROR_SYSTEM_NOT_READY
inline constexpr CUresult kCudaErrorSystemDriverMismatch = 803;    // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
inline constexpr CUresult kCudaErrorCompatNotSupported = 804;      // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE

// CUdevice_attribute values.
inline constexpr int kDevAttrMaxThreadsPerBlock = 1;              // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
inline constexpr int kDevAttrMaxSharedMemoryPerBlock = 8;         // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
inline constexpr int kDevAttrWarpSize = 10;                       // CU_DEVICE_ATTRIBUTE_WARP_SIZE
inline constexpr int kDevAttrMaxRegistersPerBlock = 12;           // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
inline constexpr int kDevAttrMultiprocessorCount = 16;            // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
inline constexpr int kDevAttrL2CacheSize = 38;                    // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
inline constexpr int kDevAttrComputeCapabilityMajor = 75;         // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int kDevAttrComputeCapabilityMinor = 76;         // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
inline constexpr int kDevAttrMaxSharedMemoryPerMultiprocessor = 81;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
inline constexpr int kDevAttrMaxSharedMemoryPerBlockOptin = 97;   // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

// CUfunction_attribute values.
inline constexpr int kFuncAttrMaxThreadsPerBlock = 0;             // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
inline constexpr int kFuncAttrSharedSizeBytes = 1;                // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
inline constexpr int kFuncAttrNumRegs = 4;                        // CU_FUNC_ATTRIBUTE_NUM_REGS
inline constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;      // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// Flags.
inline constexpr unsigned kStreamNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDefault = 0x0;       // CU_EVENT_DEFAULT (timing enabled)
// CU_STREAM_CAPTURE_MODE_RELAXED: other threads may allocate while a stream captures.
inline constexpr int kStreamCaptureModeRelaxed = 2;

// cuLaunchKernelEx's configuration (CUlaunchConfig, CUlaunchAttribute and
// the CUlaunchAttributeID values kiln sets).
inline constexpr int kLaunchAttrCooperative = 2;       // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
inline constexpr int kLaunchAttrClusterDimension = 4;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
inline constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;
struct CUlaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union alignas(8) {
    char bytes[64];
    int value;           // cooperative, programmaticStreamSerializationAllowed
    unsigned dims[3];    // clusterDim
  } value = {};
};
struct CUlaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  CUlaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};

// CUDA_KERNEL_NODE_PARAMS_v2: what cuGraphExecKernelNodeSetParams sets.
struct CUkernelNodeParams {
  CUfunction func = nullptr;
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  void** params = nullptr;
  void** extra = nullptr;
  CUkernel kern = nullptr;  // used only without func
  CUcontext ctx = nullptr;  // ignored with func
};
// CUstreamCaptureStatus: CU_STREAM_CAPTURE_STATUS_ACTIVE.
inline constexpr int kStreamCaptureStatusActive = 1;

// nvrtcResult values.
inline constexpr nvrtcResult kNvrtcSuccess = 0;             // NVRTC_SUCCESS
inline constexpr nvrtcResult kNvrtcErrorInvalidOption = 5;  // NVRTC_ERROR_INVALID_OPTION
inline constexpr nvrtcResult kNvrtcErrorCompilation = 6;    // NVRTC_ERROR_COMPILATION

// Without opting in, a kernel may use at most this much dynamic shared memory.
inline constexpr int kDefaultDynamicSharedMemoryLimit = 48 * 1024;

}  // namespace kiln::jit

#endif  // KILN_JIT_CUDA_TYPES_H_
