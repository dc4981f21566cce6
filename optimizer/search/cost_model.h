// The search's cost model: an estimate of a kernel graph's time on an
// H100-like GPU from its bytes, flops, waves and barriers, by which the
// superoptimizer ranks candidates (superoptimize.h) before any is timed.
#ifndef KILN_OPTIMIZER_SEARCH_COST_MODEL_H_
#define KILN_OPTIMIZER_SEARCH_COST_MODEL_H_

#include "optimizer/ugraph.h"

namespace kiln::search {

// The cost model's constants: H100 defaults, fitted to 107 in-search
// timings of the fused cases' schedules (rmsnorm_linear_bs1/bs8,
// gated_mlp_bs8, lora_r16): with these, each case's fastest measured
// schedule is the model's first or among its first four. A loop step's
// barrier is hidden by the other blocks on the SM (the timings ranked
// best with no per-step cost); the latencies may be anywhere in 0.2-0.7
// and 0.2-0.7 us and rank the same.
struct CostConstants {
  double idle_latency_us = 0.6;    // a load's latency with the memory system idle
  double loaded_latency_us = 0.7;  // added at full bandwidth
  double step_us = 0;              // a loop step's barrier, per wave
  // Each barrier of a loop step past its first, per wave: a chain of
  // dependent phases within the block (the online softmax's product, max,
  // exponentials and sums) that other blocks' loads do not hide. Set from
  // one timing, not fitted: gqa_bs1 with 4 query rows a block took about
  // 1 us a step of 5 barriers on the H100 (68 us, 64 steps). Scaled by
  // the step's elements per thread past two (EstimateMicroseconds): query
  // tiles of 16 rows and 128 keys took about 1 us a phase (gqa_bs8).
  double phase_us = 0.25;
  double combine_us = 4;           // a split loop's combine
  double launch_us = 3;
};

// The cost model's estimate for a graph on an H100-like GPU, microseconds;
// kInfeasibleUs where the code generator cannot emit one of its kernels
// (tiles past shared memory, say).
inline constexpr double kInfeasibleUs = 1e30;
double EstimateMicroseconds(const ugraph::KernelGraph& graph, const CostConstants& constants = {});

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_COST_MODEL_H_
