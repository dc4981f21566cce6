// Bottom-up enumeration of graph-defined kernels for a region (after Mirage
// §4): for each way of mapping the region's dim classes onto the grid, the
// for-loop and whole-tile reads, tile programs are grown one op at a time —
// first the loop body, then the for-loop accumulators (every finished
// loop-body result), then the ops after the loop — in a canonical order
// (an op either reads the op before it or sorts after it; no op twice), so
// each program is produced once. Every prefix is validated as it grows
// (shapes, loop placement) and pruned unless each new tile's abstract
// expression is a subexpression of the region's (abstract_check.h).
// Normalizations of inputs whose sums run over axes read whole (QK-norm's
// rms of Q and K) are fixed ops computed where their inputs are read; the
// search builds on their results as leaves (see Normalizations).
#ifndef KILN_OPTIMIZER_SEARCH_ENUMERATE_H_
#define KILN_OPTIMIZER_SEARCH_ENUMERATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "optimizer/search/abstract_check.h"
#include "optimizer/search/candidate.h"
#include "optimizer/search/region.h"

namespace kiln::search {

struct EnumerateLimits {
  int max_loop_ops = 4;  // ops in the loop body (inputs and constants are free)
  int max_post_ops = 5;  // ops after the loop
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct EnumerateStats {
  int64_t prefixes = 0;        // partial programs built and validated
  int64_t invalid = 0;         // rejected by shapes or loop placement
  int64_t pruned = 0;          // rejected by the abstract-expression check
  int64_t complete = 0;        // programs whose output matches the region's expression
  bool out_of_time = false;
};

// Calls `found` for every complete program under `mapping` (with unused ops
// removed), until it returns false or the limits are hit.
EnumerateStats EnumeratePrograms(const Region& region, const Schedule& mapping, ExprPool& pool,
                                 AbstractChecker& checker, const EnumerateLimits& limits,
                                 const std::function<bool(const Candidate&)>& found);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_ENUMERATE_H_
