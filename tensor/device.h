// Where a tensor's data lives and where its ops run.
#ifndef KILN_TENSOR_DEVICE_H_
#define KILN_TENSOR_DEVICE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"

namespace kiln {

enum class DeviceType : uint8_t { kCpu, kCuda };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device Cpu() { return Device{DeviceType::kCpu, 0}; }
  static Device Cuda(int index = 0) { return Device{DeviceType::kCuda, index}; }
  // "cpu", "cuda", "cuda:1".
  static absl::StatusOr<Device> Parse(absl::string_view text);

  std::string ToString() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace kiln

#endif  // KILN_TENSOR_DEVICE_H_
