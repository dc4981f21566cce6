#include "jit/device_info.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/cuda_status.h"

namespace kiln::jit {

std::string DeviceInfo::NvrtcArch(int major, int minor) {
  if (major == 9 && minor == 0) return "sm_90a";
  return absl::StrCat("sm_", major, minor);
}

std::string DeviceInfo::ToString() const {
  return absl::StrFormat(
      "cuda:%d %s (%s, compute %d.%d, %d SMs, %.1f GiB, %d KiB shared/block opt-in, %d MiB L2, "
      "driver %d.%d)",
      ordinal, name, arch(), compute_major, compute_minor, sm_count,
      static_cast<double>(total_memory_bytes) / (1024.0 * 1024.0 * 1024.0),
      shared_memory_per_block_optin / 1024, l2_cache_bytes / (1024 * 1024),
      driver_version / 1000, (driver_version % 1000) / 10);
}

absl::StatusOr<int> DeviceCount(const DriverApi& driver) {
  int count = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDeviceGetCount(&count)));
  return count;
}

absl::StatusOr<DeviceInfo> QueryDevice(const DriverApi& driver, int ordinal) {
  KILN_JIT_ASSIGN_OR_RETURN(const int count, DeviceCount(driver));
  if (count == 0) {
    return absl::UnavailableError(
        "the CUDA driver sees no device; kiln runs on the CPU instead");
  }
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(absl::StrCat("no CUDA device cuda:", ordinal, ": the driver sees ",
                                                   count, count == 1 ? " device" : " devices"));
  }
  CUdevice device = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDeviceGet(&device, ordinal)));

  DeviceInfo info;
  info.ordinal = ordinal;
  info.driver_version = driver.driver_version;
  char name[256] = {};
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDeviceGetName(name, sizeof(name) - 1, device)));
  info.name = std::string(name, strnlen(name, sizeof(name)));
  size_t total = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDeviceTotalMem(&total, device)));
  info.total_memory_bytes = static_cast<int64_t>(total);

  struct Attribute {
    int id;
    int* out;
  };
  const Attribute attributes[] = {
      {kDevAttrComputeCapabilityMajor, &info.compute_major},
      {kDevAttrComputeCapabilityMinor, &info.compute_minor},
      {kDevAttrMultiprocessorCount, &info.sm_count},
      {kDevAttrWarpSize, &info.warp_size},
      {kDevAttrMaxThreadsPerBlock, &info.max_threads_per_block},
      {kDevAttrMaxRegistersPerBlock, &info.max_registers_per_block},
      {kDevAttrMaxSharedMemoryPerBlock, &info.shared_memory_per_block},
      {kDevAttrMaxSharedMemoryPerBlockOptin, &info.shared_memory_per_block_optin},
      {kDevAttrMaxSharedMemoryPerMultiprocessor, &info.shared_memory_per_sm},
      {kDevAttrL2CacheSize, &info.l2_cache_bytes},
  };
  for (const Attribute& attribute : attributes) {
    KILN_JIT_RETURN_IF_ERROR(
        KILN_CU(driver, cuDeviceGetAttribute(attribute.out, attribute.id, device)));
  }
  return info;
}

}  // namespace kiln::jit
