// The one wrapper every CUDA driver and NVRTC call goes through: a failed
// call becomes an absl::Status carrying the call's text and the library's
// error name and description, e.g.
//   "cuMemAlloc(&ptr, bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory".
#ifndef KILN_JIT_CUDA_STATUS_H_
#define KILN_JIT_CUDA_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jit/cuda_types.h"

namespace kiln::jit {

struct DriverApi;
struct NvrtcApi;

// The canonical code for a driver error: ResourceExhausted for out of
// memory, Unavailable when there is no usable device or driver,
// InvalidArgument for bad values and images, Internal otherwise.
absl::StatusCode CudaErrorCode(CUresult result);

absl::Status CudaError(const DriverApi& driver, CUresult result, absl::string_view call);
absl::Status NvrtcError(const NvrtcApi& nvrtc, nvrtcResult result, absl::string_view call,
                        absl::string_view log = {});

inline absl::Status CudaStatus(const DriverApi& driver, CUresult result, absl::string_view call) {
  if (result == kCudaSuccess) [[likely]] return absl::OkStatus();
  return CudaError(driver, result, call);
}
inline absl::Status NvrtcStatus(const NvrtcApi& nvrtc, nvrtcResult result,
                                absl::string_view call) {
  if (result == kNvrtcSuccess) [[likely]] return absl::OkStatus();
  return NvrtcError(nvrtc, result, call);
}

// Prefixes a status's message with where it happened; OK stays OK.
absl::Status Annotate(const absl::Status& status, absl::string_view prefix);

}  // namespace kiln::jit

// KILN_CU(driver, cuMemAlloc(&ptr, bytes)) calls driver.cuMemAlloc(&ptr, bytes)
// and returns its absl::Status.
#define KILN_CU(driver, call) ::kiln::jit::CudaStatus((driver), (driver).call, #call)
// KILN_NVRTC(nvrtc, nvrtcCompileProgram(...)), the same for NVRTC.
#define KILN_NVRTC(nvrtc, call) ::kiln::jit::NvrtcStatus((nvrtc), (nvrtc).call, #call)

// Early returns for Status and StatusOr, named for jit/ so they cannot clash
// with another layer's macros.
#define KILN_JIT_RETURN_IF_ERROR(expr)                    \
  do {                                                    \
    if (::absl::Status kiln_jit_status = (expr); !kiln_jit_status.ok()) { \
      return kiln_jit_status;                             \
    }                                                     \
  } while (false)

#define KILN_JIT_CONCAT_INNER(a, b) a##b
#define KILN_JIT_CONCAT(a, b) KILN_JIT_CONCAT_INNER(a, b)
#define KILN_JIT_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_JIT_ASSIGN_OR_RETURN_IMPL(KILN_JIT_CONCAT(kiln_jit_statusor_, __LINE__), lhs, expr)
#define KILN_JIT_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return statusor.status();             \
  lhs = *std::move(statusor)

#endif  // KILN_JIT_CUDA_STATUS_H_
