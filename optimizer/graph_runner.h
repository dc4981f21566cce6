// Running a whole uGraph on the GPU outside a trace: the search times its
// candidates this way, the benchmarks measure kernels, the GPU tests run the
// kernels the search chose.
#ifndef KILN_OPTIMIZER_GRAPH_RUNNER_H_
#define KILN_OPTIMIZER_GRAPH_RUNNER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/ugraph.h"

namespace kiln {

class GraphRunner {
 public:
  // Compiles the graph and allocates a buffer per tensor: floating inputs
  // filled with a small nonzero value, integer inputs zeroed, everything
  // else filled with 0xff bytes (NaN), so an unwritten element shows.
  static absl::StatusOr<std::unique_ptr<GraphRunner>> Create(CudaExecutor& executor, ugraph::KernelGraph graph,
                                                             Bindings bindings = {});

  // Replaces input tensor `id`'s contents (f32 values converted to its dtype).
  absl::Status Upload(int id, const std::vector<float>& values);
  // Runs every kernel once and waits.
  absl::Status Run();
  // Tensor `id` as f32.
  absl::StatusOr<std::vector<float>> Download(int id);
  // Microseconds per run: the median over `reps` CUDA-event timings of a
  // CUDA graph of `batch` back-to-back runs (replayed, as peers.py times
  // PyTorch), after a warm-up.
  absl::StatusOr<double> TimeMicroseconds(int reps = 30, int batch = 10);

  const ugraph::KernelGraph& graph() const { return compiled_->graph; }

 private:
  GraphRunner(CudaExecutor& executor, std::shared_ptr<const CudaExecutor::CompiledGraph> compiled, Bindings bindings)
      : executor_(executor), compiled_(std::move(compiled)), bindings_(std::move(bindings)) {}

  CudaExecutor& executor_;
  std::shared_ptr<const CudaExecutor::CompiledGraph> compiled_;
  Bindings bindings_;
  std::vector<TensorData> buffers_;
};

}  // namespace kiln

#endif  // KILN_OPTIMIZER_GRAPH_RUNNER_H_
