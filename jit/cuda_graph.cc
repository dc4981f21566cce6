#include "jit/cuda_graph.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "jit/cuda_status.h"

namespace kiln::jit {

absl::StatusOr<CudaGraph> CudaGraph::Capture(std::shared_ptr<PrimaryContext> context, CUstream stream,
                                             const std::function<absl::Status()>& enqueue) {
  KILN_JIT_RETURN_IF_ERROR(context->MakeCurrent());
  const DriverApi& driver = context->driver();
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuStreamBeginCapture(stream, kStreamCaptureModeRelaxed)));
  const absl::Status queued = enqueue();
  // End the capture whatever happened, so the stream works again.
  CUgraph graph = nullptr;
  const absl::Status ended = KILN_CU(driver, cuStreamEndCapture(stream, &graph));
  if (!queued.ok() || !ended.ok()) {
    if (graph != nullptr) KILN_CU(driver, cuGraphDestroy(graph)).IgnoreError();
    return !queued.ok() ? queued : ended;
  }
  CUgraphExec exec = nullptr;
  if (absl::Status s = KILN_CU(driver, cuGraphInstantiateWithFlags(&exec, graph, 0)); !s.ok()) {
    KILN_CU(driver, cuGraphDestroy(graph)).IgnoreError();
    return s;
  }
  return CudaGraph(std::move(context), stream, graph, exec);
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : context_(std::move(other.context_)),
      stream_(std::exchange(other.stream_, nullptr)),
      graph_(std::exchange(other.graph_, nullptr)),
      exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    Destroy();
    context_ = std::move(other.context_);
    stream_ = std::exchange(other.stream_, nullptr);
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() { Destroy(); }

void CudaGraph::Destroy() {
  if (graph_ == nullptr) return;
  if (context_->MakeCurrent().ok()) {
    KILN_CU(context_->driver(), cuGraphExecDestroy(exec_)).IgnoreError();
    KILN_CU(context_->driver(), cuGraphDestroy(graph_)).IgnoreError();
  }
  graph_ = nullptr;
  exec_ = nullptr;
}

absl::Status CudaGraph::Launch() {
  KILN_JIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return KILN_CU(context_->driver(), cuGraphLaunch(exec_, stream_));
}

absl::Status CudaGraph::SetKernelNode(CUgraphNode node, const CudaFunction& function,
                                      const LaunchConfig& config, void** args) {
  const DriverApi& driver = context_->driver();
  if (driver.cuGraphExecKernelNodeSetParams == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("the CUDA driver (", driver.library,
                                                      ") lacks cuGraphExecKernelNodeSetParams_v2"));
  }
  KILN_JIT_RETURN_IF_ERROR(context_->MakeCurrent());
  CUkernelNodeParams params;
  params.func = function.handle();
  params.grid_x = config.grid.x;
  params.grid_y = config.grid.y;
  params.grid_z = config.grid.z;
  params.block_x = config.block.x;
  params.block_y = config.block.y;
  params.block_z = config.block.z;
  params.shared_bytes = config.dynamic_shared_bytes;
  params.params = args;
  return KILN_CU(driver, cuGraphExecKernelNodeSetParams(exec_, node, &params));
}

}  // namespace kiln::jit
