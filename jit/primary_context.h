// A retained reference to a device's primary context, the context the CUDA
// runtime API and other libraries in the process share. Whatever holds device
// handles (the CudaContext, its allocator, modules, events) holds one of
// these, so the context outlives everything created in it.
#ifndef KILN_JIT_PRIMARY_CONTEXT_H_
#define KILN_JIT_PRIMARY_CONTEXT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "jit/cuda_types.h"
#include "jit/driver_api.h"

namespace kiln::jit {

class PrimaryContext {
 public:
  // cuDevicePrimaryCtxRetain on device `ordinal`.
  static absl::StatusOr<std::shared_ptr<PrimaryContext>> Retain(const DriverApi& driver,
                                                                int ordinal);
  ~PrimaryContext();  // cuDevicePrimaryCtxRelease
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  // Binds the context to the calling thread (cuCtxSetCurrent), which every
  // driver call that allocates, copies or launches needs. Cheap: a
  // thread-local store in the driver.
  absl::Status MakeCurrent() const;

  const DriverApi& driver() const { return *driver_; }
  CUcontext handle() const { return context_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }

 private:
  PrimaryContext(const DriverApi* driver, int ordinal, CUdevice device, CUcontext context)
      : driver_(driver), ordinal_(ordinal), device_(device), context_(context) {}
  const DriverApi* driver_;
  int ordinal_;
  CUdevice device_;
  CUcontext context_;
};

}  // namespace kiln::jit

#endif  // KILN_JIT_PRIMARY_CONTEXT_H_
