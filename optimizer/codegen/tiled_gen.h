// Graph-defined kernels found by the search (BlockKind::kTiled): each tile
// op becomes a loop over the tile's elements in shared memory, the matmuls
// block-wide products, the for-loop streams the loop-walked inputs.
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "optimizer/codegen/emitter.h"
#include "optimizer/codegen/generate.h"

namespace kiln::codegen {

struct TiledKernel {
  // Dynamic shared memory: SharedMemoryBytes (a buffer per tile) plus
  // scratch for partial sums where threads split a matmul's contraction.
  int64_t shared_bytes = 0;
  // A split loop's workspace per grid point (SplitWorkspaceBytesPerPoint).
  int64_t workspace_bytes_per_point = 0;
  // Blocks per SM the kernel's registers must leave room for: searched
  // kernels mostly stream memory, and want 1024 threads resident where
  // shared memory allows.
  int64_t min_blocks = 1;
  // Bytes a block has requested at once in a loop step (KernelSource).
  int64_t inflight_bytes = 0;
  MatmulPath matmul_path = MatmulPath::kNone;  // the slowest of op_paths
  std::vector<MatmulPath> op_paths;            // per tile op: a matmul's path, kNone otherwise
  // Barriers a loop step takes, warps that issue its mma (KernelSource).
  int64_t step_barriers = 0;
  int64_t mma_warps = 0;
  // Threads that share out a loop step's work, and the flash path's groups
  // of warps (KernelSource).
  int64_t step_threads = 0;
  int64_t flash_groups = 1;
  bool flash_groups_share_columns = false;
  // A split loop whose blocks can share out the combine; the ring's first
  // copies before the wait for the kernel before (KernelSource).
  bool split_together = false;
  int64_t split_cluster = 1;
  bool inputs_before_wait = false;
};

// Emits the kernel body.
absl::StatusOr<TiledKernel> GenerateTiled(Emitter& e, const ugraph::BlockGraph& block);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_GEN_H_
