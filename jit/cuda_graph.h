// CUDA graphs on a context's stream: work captured once and replayed with
// one launch (the benchmarks time kernels this way, as PyTorch's CUDA-graph
// replay does, so that launch overhead is not counted).
#ifndef KILN_JIT_CUDA_GRAPH_H_
#define KILN_JIT_CUDA_GRAPH_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "jit/cuda_module.h"
#include "jit/cuda_types.h"
#include "jit/primary_context.h"

namespace kiln::jit {

// Created by CudaContext::CaptureGraph; must not outlive that CudaContext.
class CudaGraph {
 public:
  // Runs `enqueue` with the stream capturing: what it queues on the stream
  // becomes the graph instead of running. It must not wait on the stream
  // (no synchronous copies, no synchronize); its error, or the capture's,
  // is returned, and the stream is left out of capture mode either way.
  static absl::StatusOr<CudaGraph> Capture(std::shared_ptr<PrimaryContext> context, CUstream stream,
                                           const std::function<absl::Status()>& enqueue);
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  ~CudaGraph();

  // Queues one replay of the captured work on the stream.
  absl::Status Launch();
  // Makes later replays run `node` (a kernel node of this graph, from
  // CudaContext::CapturedNode) as `function` with `config`'s grid, block and
  // dynamic shared memory and the parameters `args` points at (copied now).
  // The launch's other attributes (cooperative, early, cluster) stay as
  // captured. Needs CudaContext::CanUpdateGraphs.
  absl::Status SetKernelNode(CUgraphNode node, const CudaFunction& function, const LaunchConfig& config,
                             void** args);

 private:
  CudaGraph(std::shared_ptr<PrimaryContext> context, CUstream stream, CUgraph graph, CUgraphExec exec)
      : context_(std::move(context)), stream_(stream), graph_(graph), exec_(exec) {}
  void Destroy();

  std::shared_ptr<PrimaryContext> context_;
  CUstream stream_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace kiln::jit

#endif  // KILN_JIT_CUDA_GRAPH_H_
