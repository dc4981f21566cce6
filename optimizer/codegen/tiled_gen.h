// Graph-defined kernels found by the search (BlockKind::kTiled): each tile
// op becomes a loop over the tile's elements in shared memory, the matmuls
// block-wide products, the for-loop streams the loop-walked inputs.
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "optimizer/codegen/emitter.h"

namespace kiln::codegen {

// Emits the kernel body; returns the dynamic shared memory it needs, in
// bytes: SharedMemoryBytes (a buffer per tile) plus scratch for partial
// sums where threads split a matmul's contraction.
absl::StatusOr<int64_t> GenerateTiled(Emitter& e, const ugraph::BlockGraph& block);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
