// The driver layer without a GPU: loading fails cleanly, and the status
// wrapper and device query work against a fake driver table.
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/cuda_context.h"
#include "jit/cuda_status.h"
#include "jit/device_info.h"
#include "jit/driver_api.h"
#include "jit/nvrtc_api.h"

namespace kiln::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(JitDriver, MissingLibraryIsUnavailableWithOneClearMessage) {
  LibraryOptions libraries;
  libraries.cuda_library = "/nonexistent/libcuda.so.1";
  absl::StatusOr<const DriverApi*> driver = LoadDriver(libraries);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  const std::string message(driver.status().message());
  EXPECT_THAT(message, HasSubstr("no CUDA driver"));
  EXPECT_THAT(message, HasSubstr("/nonexistent/libcuda.so.1"));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
  EXPECT_THAT(message, HasSubstr("runs on the CPU"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  // The answer is remembered, not probed again.
  EXPECT_EQ(LoadDriver(libraries).status(), driver.status());
}

TEST(JitDriver, DefaultLoadEitherWorksOrFallsBackCleanly) {
  absl::StatusOr<const DriverApi*> driver = LoadDriver();
  if (driver.ok()) {
    EXPECT_EQ((*driver)->library, "libcuda.so.1");
    EXPECT_GT((*driver)->driver_version, 0);
    return;
  }
  // A machine without a GPU (CI): Unavailable, naming what was tried.
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), HasSubstr("libcuda.so.1"));
  EXPECT_THAT(driver.status().message(), HasSubstr("CPU"));
}

TEST(JitDriver, LibraryWithoutDriverSymbolsIsUnavailable) {
  LibraryOptions libraries;
  libraries.cuda_library = "libm.so.6";  // loads, but is not the driver
  absl::StatusOr<const DriverApi*> driver = LoadDriver(libraries);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), HasSubstr("lacks cuInit"));
  EXPECT_THAT(driver.status().message(), HasSubstr("CPU"));
}

TEST(JitDriver, ContextWithoutDriverIsUnavailable) {
  LibraryOptions libraries;
  libraries.cuda_library = "/nonexistent/libcuda.so.1";
  absl::StatusOr<std::unique_ptr<CudaContext>> context = CudaContext::Create(0, libraries);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), absl::StatusCode::kUnavailable);
}

// ---- the status wrapper, against fake driver and NVRTC entry points

CUresult FakeErrorName(CUresult error, const char** name) {
  switch (error) {
    case kCudaErrorOutOfMemory:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return kCudaSuccess;
    case kCudaErrorNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      return kCudaSuccess;
    default:
      return kCudaErrorInvalidValue;  // what the driver says for unknown codes
  }
}

CUresult FakeErrorString(CUresult error, const char** text) {
  if (error == kCudaErrorOutOfMemory) {
    *text = "out of memory";
    return kCudaSuccess;
  }
  return kCudaErrorInvalidValue;
}

DriverApi FakeDriver() {
  DriverApi driver;
  driver.cuGetErrorName = &FakeErrorName;
  driver.cuGetErrorString = &FakeErrorString;
  driver.cuMemAlloc = [](CUdeviceptr*, size_t) -> CUresult { return kCudaErrorOutOfMemory; };
  driver.cuMemFree = [](CUdeviceptr) -> CUresult { return kCudaSuccess; };
  driver.cuInit = [](unsigned) -> CUresult { return 12345; };
  return driver;
}

TEST(JitCudaStatus, NamesTheCallAndTheError) {
  const DriverApi driver = FakeDriver();
  CUdeviceptr ptr = 0;
  absl::Status status = KILN_CU(driver, cuMemAlloc(&ptr, 1024));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "cuMemAlloc(&ptr, 1024): CUDA_ERROR_OUT_OF_MEMORY: out of memory");
}

TEST(JitCudaStatus, SuccessIsOk) {
  const DriverApi driver = FakeDriver();
  EXPECT_TRUE(KILN_CU(driver, cuMemFree(0)).ok());
}

TEST(JitCudaStatus, UnknownErrorIsReportedByNumber) {
  const DriverApi driver = FakeDriver();
  absl::Status status = KILN_CU(driver, cuInit(0));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(), "cuInit(0): CUDA error 12345");
}

TEST(JitCudaStatus, NameWithoutDescription) {
  const DriverApi driver = FakeDriver();
  absl::Status status = CudaStatus(driver, kCudaErrorNoDevice, "cuInit(0)");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "cuInit(0): CUDA_ERROR_NO_DEVICE");
}

TEST(JitCudaStatus, CanonicalCodes) {
  EXPECT_EQ(CudaErrorCode(kCudaErrorOutOfMemory), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaErrorCode(kCudaErrorNoDevice), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CudaErrorCode(kCudaErrorStubLibrary), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CudaErrorCode(kCudaErrorInvalidValue), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(kCudaErrorInvalidImage), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(kCudaErrorNotFound), absl::StatusCode::kNotFound);
  EXPECT_EQ(CudaErrorCode(999), absl::StatusCode::kInternal);  // CUDA_ERROR_UNKNOWN
}

NvrtcApi FakeNvrtc() {
  NvrtcApi nvrtc;
  nvrtc.nvrtcGetErrorString = [](nvrtcResult result) -> const char* {
    return result == kNvrtcErrorCompilation ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR unknown";
  };
  return nvrtc;
}

TEST(JitCudaStatus, NvrtcErrorCarriesTheLog) {
  const NvrtcApi nvrtc = FakeNvrtc();
  absl::Status status = NvrtcError(nvrtc, kNvrtcErrorCompilation, "nvrtcCompileProgram(k.cu)",
                                   "k.cu(2): error: expected a \";\"\n\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "nvrtcCompileProgram(k.cu): NVRTC_ERROR_COMPILATION\nprogram log:\n"
            "k.cu(2): error: expected a \";\"");
  EXPECT_EQ(NvrtcError(nvrtc, 11, "nvrtcCompileProgram(k.cu)").code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(NvrtcStatus(nvrtc, kNvrtcSuccess, "x").ok());
}

TEST(JitCudaStatus, HugeLogsAreCut) {
  const NvrtcApi nvrtc = FakeNvrtc();
  const std::string log = "first error\n" + std::string(100000, 'w');
  absl::Status status = NvrtcError(nvrtc, kNvrtcErrorCompilation, "compile", log);
  EXPECT_LT(status.message().size(), 20000u);
  EXPECT_THAT(status.message(), HasSubstr("first error"));
  EXPECT_THAT(status.message(), HasSubstr("more bytes of log"));
}

TEST(JitCudaStatus, AnnotatePrefixesErrorsOnly) {
  EXPECT_TRUE(Annotate(absl::OkStatus(), "where").ok());
  absl::Status status = Annotate(absl::NotFoundError("no kernel"), "module x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "module x: no kernel");
}

// ---- the device query, against a fake one-device driver

CUresult FakeAttribute(int* value, int attribute, CUdevice device) {
  switch (attribute) {
    case kDevAttrComputeCapabilityMajor: *value = 9; break;
    case kDevAttrComputeCapabilityMinor: *value = 0; break;
    case kDevAttrMultiprocessorCount: *value = 132; break;
    case kDevAttrWarpSize: *value = 32; break;
    case kDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case kDevAttrMaxRegistersPerBlock: *value = 65536; break;
    case kDevAttrMaxSharedMemoryPerBlock: *value = 49152; break;
    case kDevAttrMaxSharedMemoryPerBlockOptin: *value = 232448; break;
    case kDevAttrMaxSharedMemoryPerMultiprocessor: *value = 233472; break;
    case kDevAttrL2CacheSize: *value = 52428800; break;
    default: return kCudaErrorInvalidValue;
  }
  return kCudaSuccess;
}

DriverApi FakeHopper() {
  DriverApi driver = FakeDriver();
  driver.driver_version = 13000;
  driver.cuDeviceGetCount = [](int* count) -> CUresult { *count = 1; return kCudaSuccess; };
  driver.cuDeviceGet = [](CUdevice* device, int ordinal) -> CUresult {
    *device = ordinal;
    return kCudaSuccess;
  };
  driver.cuDeviceGetName = [](char* name, int length, CUdevice) -> CUresult {
    std::strncpy(name, "Fake H100", length);
    return kCudaSuccess;
  };
  driver.cuDeviceTotalMem = [](size_t* bytes, CUdevice) -> CUresult {
    *bytes = size_t{80} << 30;
    return kCudaSuccess;
  };
  driver.cuDeviceGetAttribute = &FakeAttribute;
  return driver;
}

TEST(JitDeviceInfo, QueriesEveryProperty) {
  const DriverApi driver = FakeHopper();
  absl::StatusOr<DeviceInfo> info = QueryDevice(driver, 0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "Fake H100");
  EXPECT_EQ(info->compute_major, 9);
  EXPECT_EQ(info->compute_minor, 0);
  EXPECT_EQ(info->arch(), "sm_90a");
  EXPECT_EQ(info->sm_count, 132);
  EXPECT_EQ(info->max_threads_per_block, 1024);
  EXPECT_EQ(info->shared_memory_per_block, 49152);
  EXPECT_EQ(info->shared_memory_per_block_optin, 232448);
  EXPECT_EQ(info->l2_cache_bytes, 52428800);
  EXPECT_EQ(info->total_memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(info->driver_version, 13000);
  EXPECT_THAT(info->ToString(), HasSubstr("cuda:0 Fake H100 (sm_90a, compute 9.0, 132 SMs"));
}

TEST(JitDeviceInfo, MissingOrdinalIsInvalidArgument) {
  const DriverApi driver = FakeHopper();
  for (int ordinal : {1, -1}) {
    absl::StatusOr<DeviceInfo> info = QueryDevice(driver, ordinal);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(info.status().message(), HasSubstr("sees 1 device"));
  }
}

TEST(JitDeviceInfo, NoDevicesIsUnavailable) {
  DriverApi driver = FakeHopper();
  driver.cuDeviceGetCount = [](int* count) -> CUresult { *count = 0; return kCudaSuccess; };
  absl::StatusOr<DeviceInfo> info = QueryDevice(driver, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(info.status().message(), HasSubstr("CPU"));
}

TEST(JitDeviceInfo, AttributeFailureNamesTheCall) {
  DriverApi driver = FakeHopper();
  driver.cuDeviceGetAttribute = [](int*, int, CUdevice) -> CUresult { return kCudaErrorNoDevice; };
  absl::StatusOr<DeviceInfo> info = QueryDevice(driver, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("cuDeviceGetAttribute("));
}

TEST(JitDeviceInfo, NvrtcArchNames) {
  EXPECT_EQ(DeviceInfo::NvrtcArch(9, 0), "sm_90a");  // Hopper: wgmma needs the 'a' target
  EXPECT_EQ(DeviceInfo::NvrtcArch(8, 0), "sm_80");
  EXPECT_EQ(DeviceInfo::NvrtcArch(8, 6), "sm_86");
  EXPECT_EQ(DeviceInfo::NvrtcArch(8, 9), "sm_89");
  EXPECT_EQ(DeviceInfo::NvrtcArch(10, 0), "sm_100");
  EXPECT_EQ(DeviceInfo::NvrtcArch(12, 0), "sm_120");
}

}  // namespace
}  // namespace kiln::jit
