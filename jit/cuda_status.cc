#include "jit/cuda_status.h"

#include "absl/strings/str_cat.h"
#include "jit/driver_api.h"
#include "jit/nvrtc_api.h"

namespace kiln::jit {
namespace {

// A program log can run to megabytes when every line of a big generated
// kernel warns; the head names the first problem, which is what helps.
constexpr size_t kMaxLogInMessage = 16 * 1024;

std::string TrimLog(absl::string_view log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == '\0')) log.remove_suffix(1);
  if (log.size() <= kMaxLogInMessage) return std::string(log);
  return absl::StrCat(log.substr(0, kMaxLogInMessage), "\n... (", log.size() - kMaxLogInMessage,
                      " more bytes of log)");
}

}  // namespace

absl::StatusCode CudaErrorCode(CUresult result) {
  switch (result) {
    case kCudaErrorOutOfMemory:
      return absl::StatusCode::kResourceExhausted;
    case kCudaErrorNotInitialized:
    case kCudaErrorDeinitialized:
    case kCudaErrorStubLibrary:
    case kCudaErrorDeviceUnavailable:
    case kCudaErrorNoDevice:
    case kCudaErrorSystemNotReady:
    case kCudaErrorSystemDriverMismatch:
    case kCudaErrorCompatNotSupported:
      return absl::StatusCode::kUnavailable;
    case kCudaErrorInvalidValue:
    case kCudaErrorInvalidDevice:
    case kCudaErrorInvalidImage:
    case kCudaErrorNoBinaryForGpu:
    case kCudaErrorInvalidPtx:
    case kCudaErrorUnsupportedPtxVersion:
    case kCudaErrorLaunchOutOfResources:
      return absl::StatusCode::kInvalidArgument;
    case kCudaErrorNotFound:
      return absl::StatusCode::kNotFound;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status CudaError(const DriverApi& driver, CUresult result, absl::string_view call) {
  // The name lookups can themselves fail (e.g. for a code newer than the
  // driver); the number is always reported then.
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(result, &name) != kCudaSuccess) {
    name = nullptr;
  }
  if (driver.cuGetErrorString == nullptr ||
      driver.cuGetErrorString(result, &text) != kCudaSuccess) {
    text = nullptr;
  }
  std::string message = absl::StrCat(call, ": ");
  if (name != nullptr) {
    absl::StrAppend(&message, name);
  } else {
    absl::StrAppend(&message, "CUDA error ", result);
  }
  if (text != nullptr) absl::StrAppend(&message, ": ", text);
  return absl::Status(CudaErrorCode(result), message);
}

absl::Status NvrtcError(const NvrtcApi& nvrtc, nvrtcResult result, absl::string_view call,
                        absl::string_view log) {
  const char* name = nvrtc.nvrtcGetErrorString != nullptr ? nvrtc.nvrtcGetErrorString(result)
                                                           : nullptr;
  std::string message = absl::StrCat(call, ": ");
  if (name != nullptr) {
    absl::StrAppend(&message, name);
  } else {
    absl::StrAppend(&message, "NVRTC error ", result);
  }
  const std::string trimmed = TrimLog(log);
  if (!trimmed.empty()) absl::StrAppend(&message, "\nprogram log:\n", trimmed);
  const absl::StatusCode code =
      result == kNvrtcErrorCompilation || result == kNvrtcErrorInvalidOption
          ? absl::StatusCode::kInvalidArgument
          : absl::StatusCode::kInternal;
  return absl::Status(code, message);
}

absl::Status Annotate(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace kiln::jit
