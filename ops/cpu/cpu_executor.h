// The CPU reference executor: runs any trace on the host, op by op, with
// f16/bf16 computed in f32. It is the ground truth the GPU is tested against
// and the fallback where no GPU is present.
#ifndef KILN_OPS_CPU_CPU_EXECUTOR_H_
#define KILN_OPS_CPU_CPU_EXECUTOR_H_

#include <array>

#include "tensor/executor.h"

namespace kiln::cpu {

// Time spent per op kind, when profiling is on.
struct CpuProfile {
  struct Entry {
    int64_t count = 0;
    double seconds = 0;
  };
  std::array<Entry, 256> by_op;  // indexed by OpKind
  double total_seconds = 0;      // whole Run calls
};

class CpuExecutor : public Executor {
 public:
  explicit CpuExecutor(bool profile = false) : profile_enabled_(profile) {}

  absl::StatusOr<std::vector<TensorData>> Run(const Trace& trace,
                                              const Bindings& bindings) override;
  absl::Status CopyToHost(const TensorData& data, DType dtype, void* dst) override;
  absl::StatusOr<TensorData> CopyFromHost(const TensorData& host, DType dtype) override;

  // Not synchronized: profile with one thread realizing.
  const CpuProfile& profile() const { return profile_; }
  void ResetProfile() { profile_ = CpuProfile(); }

 private:
  bool profile_enabled_;
  CpuProfile profile_;
};

// Registers a CpuExecutor for DeviceType::kCpu once per process.
void EnsureCpuExecutorRegistered();

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_CPU_EXECUTOR_H_
