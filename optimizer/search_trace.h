// The superoptimizer in the CUDA executor's path: the regions of a trace
// worth searching (two or more matmuls or reductions that the default
// lowering puts in separate kernels, each value inside used only there),
// each searched (results cached on disk) and timed against its default
// lowering on the GPU; the ones whose searched kernel is faster come back,
// ready for LowerOptions::fused.
#ifndef KILN_OPTIMIZER_SEARCH_TRACE_H_
#define KILN_OPTIMIZER_SEARCH_TRACE_H_

#include <string>
#include <vector>

#include "optimizer/cuda_executor.h"
#include "optimizer/lower.h"
#include "optimizer/search/superoptimize.h"
#include "tensor/trace.h"

namespace kiln {

struct TraceSearchOptions {
  search::SearchOptions search;  // cache_dir and budget; timing is filled in
  bool log = false;              // print each region's report to stderr
};

std::vector<lowering::FusedRegion> SearchTrace(const Trace& trace, CudaExecutor& executor,
                                               const TraceSearchOptions& options);

// Makes `executor` search every new trace's regions from now on.
void EnableSuperoptimizer(CudaExecutor& executor, TraceSearchOptions options);

}  // namespace kiln

#endif  // KILN_OPTIMIZER_SEARCH_TRACE_H_
