#include "tensor/device.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace kiln {

absl::StatusOr<Device> Device::Parse(absl::string_view text) {
  if (text == "cpu") return Cpu();
  if (text == "cuda") return Cuda(0);
  absl::string_view rest = text;
  int index = 0;
  if (absl::ConsumePrefix(&rest, "cuda:") && absl::SimpleAtoi(rest, &index) && index >= 0) {
    return Cuda(index);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", text, "': expected cpu, cuda or cuda:N"));
}

std::string Device::ToString() const {
  if (type == DeviceType::kCpu) return "cpu";
  return index == 0 ? "cuda" : absl::StrCat("cuda:", index);
}

}  // namespace kiln
