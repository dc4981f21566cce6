// Graph-defined kernels found by the search (BlockKind::kTiled): each tile
// op becomes a loop over the tile's elements in shared memory, the matmuls
// block-wide products, the for-loop streams the loop-walked inputs.
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_

#include "absl/status/status.h"
#include "optimizer/codegen/emitter.h"

namespace kiln::codegen {

absl::Status GenerateTiled(Emitter& e, const ugraph::BlockGraph& block);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
