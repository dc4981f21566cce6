// The CPU reference executor: runs any trace on the host, op by op, with
// f16/bf16 computed in f32. It is the ground truth the GPU is tested against
// and the fallback where no GPU is present.
#ifndef KILN_OPS_CPU_CPU_EXECUTOR_H_
#define KILN_OPS_CPU_CPU_EXECUTOR_H_

#include "tensor/executor.h"

namespace kiln::cpu {

class CpuExecutor : public Executor {
 public:
  absl::StatusOr<std::vector<TensorData>> Run(const Trace& trace,
                                              const Bindings& bindings) override;
  absl::Status CopyToHost(const TensorData& data, DType dtype, void* dst) override;
};

// Registers a CpuExecutor for DeviceType::kCpu once per process.
void EnsureCpuExecutorRegistered();

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_CPU_EXECUTOR_H_
