// The superoptimizer in the CUDA executor's path: the regions of a trace
// worth searching (two or more matmuls or reductions that the default
// lowering puts in separate kernels, each value inside used only there),
// each searched (results cached on disk) and timed against its default
// lowering on the GPU; the ones whose searched kernel is faster come back,
// ready for LowerOptions::fused.
#ifndef KILN_OPTIMIZER_SEARCH_TRACE_H_
#define KILN_OPTIMIZER_SEARCH_TRACE_H_

#include <functional>
#include <optional>
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

// The regions of `trace` worth searching, largest first, each handed to
// `search`; the ones it returns a kernel graph for come back, claimed (no
// later region overlaps them). A region may have symbolic sizes (a decode
// step's KV length) and read its inputs through views (a slice of the KV
// cache): the lowering folds those views into the kernel's reads.
using RegionSearchFn = std::function<std::optional<ugraph::KernelGraph>(const search::Region&)>;
std::vector<lowering::FusedRegion> FuseTraceRegions(const Trace& trace, const RegionSearchFn& search);

// FuseTraceRegions with the superoptimizer as `search`, candidates timed on
// the executor's GPU. A symbolic size is timed at its symbol's largest
// value (a decode step at the longest context the model allows).
std::vector<lowering::FusedRegion> SearchTrace(const Trace& trace, CudaExecutor& executor,
                                               const TraceSearchOptions& options);

// Makes `executor` search every new trace's regions from now on.
void EnableSuperoptimizer(CudaExecutor& executor, TraceSearchOptions options);

}  // namespace kiln

#endif  // KILN_OPTIMIZER_SEARCH_TRACE_H_
