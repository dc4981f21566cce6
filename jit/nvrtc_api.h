// NVRTC, the runtime CUDA compiler, opened with dlopen on first use. Like
// DriverApi, members are named after the API functions:
// KILN_NVRTC(nvrtc, nvrtcCompileProgram(program, n, flags)).
#ifndef KILN_JIT_NVRTC_API_H_
#define KILN_JIT_NVRTC_API_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "jit/cuda_types.h"
#include "jit/options.h"

namespace kiln::jit {

struct NvrtcApi {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name,
                                    int num_headers, const char* const* headers,
                                    const char* const* include_names) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int num_options,
                                     const char* const* options) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin) = nullptr;

  std::string library;  // what was opened, e.g. "libnvrtc.so.13"
  int version_major = 0;
  int version_minor = 0;
};

// NVRTC, opened on the first call for these options and kept for the life of
// the process. Tries options.nvrtc_library when set, else "libnvrtc.so.13",
// "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so".
// Unavailable, with one message naming what was tried, when none loads or a
// symbol is missing. Needs no GPU.
absl::StatusOr<const NvrtcApi*> LoadNvrtc(const LibraryOptions& options = {});

}  // namespace kiln::jit

#endif  // KILN_JIT_NVRTC_API_H_
