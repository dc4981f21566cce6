// The code generator: one kernel of a uGraph -> CUDA C++ source that
// includes the device tile library (kiln/tiles.cuh). Views become index
// arithmetic, sizes that depend on symbols are kernel arguments, and every
// shape works (tails are predicated).
#ifndef KILN_OPTIMIZER_CODEGEN_GENERATE_H_
#define KILN_OPTIMIZER_CODEGEN_GENERATE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/ugraph.h"

namespace kiln::codegen {

inline constexpr char kKernelName[] = "kiln_kernel";

// How a kernel's slowest matmul runs (the cost model's compute rate).
enum class MatmulPath {
  kNone,          // no matmul, or not known
  kTensorCores,   // mma.sync from the ring
  kRegisters,     // FMAs on B vectors in registers (direct)
  kSharedMemory,  // FMAs on f32 tiles in shared memory
};

// Counters (unsigned) a split loop takes per grid point: the count in, and
// where its blocks share out the combine, the count out (split_leave).
inline constexpr int kSplitCounters = 2;

struct KernelSource {
  std::string source;
  // The kernel takes one struct: { char* t[]; long long s[]; int* err;
  // char* ws; unsigned* counters; unsigned together; }: ws and counters
  // serve split loops (see workspace_bytes_per_point), and `together` says
  // a split loop's blocks are all resident (see split_together).
  std::vector<int> slots;                  // the DTensor behind t[i]
  std::vector<const SymbolInfo*> symbols;  // the symbol behind s[i]
  int threads = 0;
  // Blocks per SM its launch bounds ask registers to allow (1: none asked).
  int64_t min_blocks = 1;
  // Bytes a block has requested from memory at once in a loop step (its
  // staged loads; one load per thread for the others). 0: not known.
  int64_t inflight_bytes = 0;
  MatmulPath matmul_path = MatmulPath::kNone;
  // kTiled: per tile op, the path its matmul runs on (kNone for the other
  // ops); matmul_path is the slowest of them.
  std::vector<MatmulPath> op_paths;
  // Barriers (__syncthreads) one loop step takes: each stalls the block's
  // warps until the slowest arrives, so a step of several is a chain of
  // latencies that more bytes in flight do not hide. 0: no loop.
  int64_t step_barriers = 0;
  // Warps of a block that issue tensor-core products (the rest wait at
  // the barriers): mma.sync reaches its rate only with many warps per SM
  // to hide its latency. 0: none.
  int64_t mma_warps = 0;
  // Threads that share out a loop step's work: all, but for the flash
  // path (tiled_flash.cc), whose rows are owned by as many warps as there
  // are slabs of 16 query rows; the rest idle through its step (unless
  // they come in groups, below).
  int64_t step_threads = 0;
  // The flash path's groups of warps that share out a step's keys, merged
  // after the loop (two barriers a block); 1: none. With O's columns shared
  // out among a group's warps, the merge moves each warp's registers once
  // (no pass over a tile).
  int64_t flash_groups = 1;
  bool flash_groups_share_columns = false;
  // Dynamic shared memory per block, in bytes (the launch passes it).
  int64_t dynamic_shared_bytes = 0;
  // A split for-loop's workspace (ws): this many bytes per grid point (a
  // point of the launch grid less the split axis), and kSplitCounters
  // counters per grid point (counters), zero before the launch and left
  // zero after it.
  // Counters are a buffer of their own: another kernel's partial sums in
  // the workspace must never look like a count. 0: none.
  int64_t workspace_bytes_per_point = 0;
  // A split loop whose blocks share out the combine when the launch keeps
  // them all resident (cooperative, with `together` 1): each waits for the
  // others of its grid point. Launched otherwise (`together` 0), the last
  // block of a point combines alone.
  bool split_together = false;
  // Where they do, the launch's thread block clusters (blocks along each
  // launch dim; sm_90 and later; on an earlier device the blocks do not go
  // on together): a row product's partial sums meet in the cluster's
  // shared memory. 1 x 1 x 1: none.
  std::array<unsigned, 3> split_cluster = {1, 1, 1};
  // Whether its blocks copy region inputs before their wait for the kernel
  // before (EmitWaitForPriorGrid): safe where that kernel is one of its
  // graph's, which itself waited for everything before the graph. The
  // executor launches it early only after another of its graph's kernels.
  bool inputs_before_wait = false;
  // Whether the kernel can report an error (index out of range, integer
  // division by zero) through err.
  bool reports_errors = false;
};

// Unimplemented for a block graph outside what the generator supports.
absl::StatusOr<KernelSource> GenerateKernel(const ugraph::KernelGraph& graph, int kernel);

// The source of `source`'s kernel compiled for one way on of its split
// loop's blocks (split_together): all going on (a cooperative launch,
// `together`), or the last block alone; the other way's code left out
// (KILN_TOGETHER). Compiled with both, the kernel takes the launch's
// p.together, but runs slower: on an H200, MLA's decode step ran
// 8.57-8.60 us with both ways' code, 8.20-8.27 with the together code
// alone (hand-edited; the same instructions on its path but for a branch
// on split_last). Other kernels: their source as it is.
std::string SourceFor(const KernelSource& source, bool together);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_GENERATE_H_
