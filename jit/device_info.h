// What kiln needs to know about a GPU to generate, compile and launch for it.
#ifndef KILN_JIT_DEVICE_INFO_H_
#define KILN_JIT_DEVICE_INFO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "jit/driver_api.h"

namespace kiln::jit {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                    // e.g. "NVIDIA H100 80GB HBM3"
  int compute_major = 0;               // compute capability, e.g. 9.0
  int compute_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_registers_per_block = 0;
  int shared_memory_per_block = 0;        // without opting in (48 KiB)
  int shared_memory_per_block_optin = 0;  // the most one block may opt in to
  int shared_memory_per_sm = 0;
  int l2_cache_bytes = 0;
  int64_t total_memory_bytes = 0;
  int driver_version = 0;              // 1000 * major + 10 * minor, e.g. 13000

  // The NVRTC target for this device (see NvrtcArch).
  std::string arch() const { return NvrtcArch(compute_major, compute_minor); }
  // One line for logs and `kiln` output.
  std::string ToString() const;

  // "sm_90a" for compute capability 9.0, so that Hopper-only instructions
  // (wgmma, setmaxnreg) are available to generated code; otherwise "sm_XY".
  // An 'a' target runs on exactly that architecture, which is what a kernel
  // compiled for the device at hand needs.
  static std::string NvrtcArch(int major, int minor);
};

// The number of CUDA devices the driver sees.
absl::StatusOr<int> DeviceCount(const DriverApi& driver);

// Reads the properties of device `ordinal`: Unavailable when the driver sees
// no device at all, InvalidArgument naming the device count when there is no
// such ordinal.
absl::StatusOr<DeviceInfo> QueryDevice(const DriverApi& driver, int ordinal);

}  // namespace kiln::jit

#endif  // KILN_JIT_DEVICE_INFO_H_
