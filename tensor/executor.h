// The interface through which the tensor layer runs traces. Executors live
// in higher layers (the CPU reference in ops/, CUDA in jit/) and register
// themselves here at start-up.
#ifndef KILN_TENSOR_EXECUTOR_H_
#define KILN_TENSOR_EXECUTOR_H_

#include <memory>

#include <vector>

#include "absl/status/statusor.h"
#include "tensor/device.h"
#include "tensor/dim.h"
#include "tensor/storage.h"
#include "tensor/trace.h"

namespace kiln {

class Executor {
 public:
  virtual ~Executor() = default;

  // Computes the outputs of `trace`, whose nodes are all on this executor's
  // device. `bindings` holds a value, within bounds, for every symbol the
  // trace uses. Returns one value per trace.outputs() entry, in order, with
  // concrete sizes.
  virtual absl::StatusOr<std::vector<TensorData>> Run(const Trace& trace,
                                                      const Bindings& bindings) = 0;

  // Copies a value held on this executor's device into dense host memory, in
  // its own dtype.
  virtual absl::Status CopyToHost(const TensorData& data, DType dtype, void* dst) = 0;

  // A dense copy, on this executor's device, of a host value.
  virtual absl::StatusOr<TensorData> CopyFromHost(const TensorData& host, DType dtype) = 0;
};

// Installs (or replaces) the executor for a device type.
void RegisterExecutor(DeviceType type, std::shared_ptr<Executor> executor);
// The registered executor, or nullptr.
std::shared_ptr<Executor> FindExecutor(DeviceType type);

}  // namespace kiln

#endif  // KILN_TENSOR_EXECUTOR_H_
