// The default lowering: a trace, cut into groups by the partitioner, becomes
// a uGraph whose kernels the code generator can emit.
#ifndef KILN_OPTIMIZER_LOWER_H_
#define KILN_OPTIMIZER_LOWER_H_

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "optimizer/ugraph.h"
#include "tensor/trace.h"

namespace kiln::lowering {

// A region the superoptimizer replaced: its kernel graph's tensors 0..n-1
// are the region's inputs (in order) and n its root; any after them pass
// values between its kernels (a factored region's, search/factor.h).
struct FusedRegion {
  const Node* root = nullptr;
  std::vector<const Node*> inputs;
  std::vector<const Node*> interior;
  ugraph::KernelGraph graph;
};

struct LowerOptions {
  // slice_update nodes that may write into their destination's buffer.
  absl::flat_hash_set<const Node*> in_place_updates;
  std::vector<FusedRegion> fused;
  // Products of at least 128 rows of f16/bf16 (prefill) take the pipelined
  // tensor-core kernel (register-staged 16-byte loads, two shared buffers,
  // 128 x 128 tiles) instead of one 64 x 64 mma tile per block; not where
  // B is a packed weight, which that kernel does not decode. On the H100 a
  // 512-token prefill of the 1B shape took 14.8 ms against 60.4 ms.
  // `--pipelined_products=false` turns it off.
  bool pipelined_products = true;
  // Decode products (a few rows) over long columns read along K (weights
  // stored [N, K]): how many adjacent columns each thread sums, loading A's
  // values once for all of them (`--decode_columns`). With 1, A is read once
  // per column: as many bytes from L2 as the weight's, twice for an f32 A.
  // On the H100, the 1B shape's decode step took 1.644 ms with 1, 1.537 with
  // 2 and 1.614 with 4 (bf16, context 1024). Several columns have compiled
  // and been timed but not yet checked against the CPU reference on a GPU
  // (GpuOpsDecodeColumns): until then the default stays 1.
  int64_t decode_columns = 1;
};

struct LoweredTrace {
  ugraph::KernelGraph graph;
  // The trace node whose value each DTensor holds (by DTensor id).
  std::vector<const Node*> tensor_nodes;
  // For each trace output: the DTensor it is, or is a view of (the view
  // nodes from that tensor's node up to the output, outermost last).
  struct Output {
    int tensor = -1;
    std::vector<const Node*> views;
  };
  std::vector<Output> outputs;
};

// Fusions the lowering cannot express are split (the node involved gets a
// buffer) and the partition retried, so any valid trace lowers.
absl::StatusOr<LoweredTrace> LowerTrace(const Trace& trace, const LowerOptions& options = {});

}  // namespace kiln::lowering

#endif  // KILN_OPTIMIZER_LOWER_H_
