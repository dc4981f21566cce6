#include "jit/primary_context.h"

#include "jit/cuda_status.h"

namespace kiln::jit {

absl::StatusOr<std::shared_ptr<PrimaryContext>> PrimaryContext::Retain(const DriverApi& driver,
                                                                       int ordinal) {
  CUdevice device = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDeviceGet(&device, ordinal)));
  CUcontext context = nullptr;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuDevicePrimaryCtxRetain(&context, device)));
  return std::shared_ptr<PrimaryContext>(new PrimaryContext(&driver, ordinal, device, context));
}

PrimaryContext::~PrimaryContext() {
  KILN_CU(*driver_, cuDevicePrimaryCtxRelease(device_)).IgnoreError();
}

absl::Status PrimaryContext::MakeCurrent() const {
  return KILN_CU(*driver_, cuCtxSetCurrent(context_));
}

}  // namespace kiln::jit
