// The plans of a graph-defined block's inputs, products, flash path and
// split combine (TiledGenerator's), apart from the generator's declarations.
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_PLANS_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_PLANS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace kiln::codegen::tiled_internal {

// How an input tile is read: `tasks` loads of `width` elements (16 bytes
// along the last axis, or 1), unravelled over `task_sizes` in `order`
// (the axis adjacent in memory last, so neighbouring threads coalesce).
struct InputPlan {
  DType dtype = DType::kF32;
  int64_t width = 1;
  // The tile axis its vectors of `width` elements run along: the last,
  // or the one before it where that is the contiguous one (a transposed
  // view: K^T read from K, MLA's C^T from C); -1 without vectors.
  int vector_axis = -1;
  std::vector<int64_t> task_sizes;
  std::vector<int> order;
  int64_t tasks = 0, per_thread = 0;
  bool staged = false;
  // Consumed from registers by a direct matmul: no tile in shared memory.
  bool direct = false;
  // Copied through the ring (PlanRing); its stages start at ring_offset
  // floats into shared memory, `tasks` 16-byte slots each.
  bool ring = false;
  int64_t ring_offset = -1;
  // The earlier input whose ring this one reads instead of copying its
  // own: the same tensor elements, slot for slot (MLA's C and C^T).
  int ring_of = -1;
  bool swizzle = false;  // see RingSlot
  // Read by threads other than the one that copied it (ldmatrix, or A of
  // a direct matmul): the step's barrier comes before its reads.
  bool cross_read = false;
  // Widened into its f32 tile; false where every reader takes its values
  // from the ring (direct matmuls, sums of it computed in registers).
  bool tile = true;
  // Read from the tensor by the op that uses it, where it uses it (a row
  // product's matrices, RowProductPlan): not loaded, no tile.
  bool at_use = false;
  // The slots of one row of its tasks: the count along the axis the
  // tasks walk fastest (its vectors' axis, where it has vectors).
  int64_t row_vectors() const { return order.empty() ? 0 : task_sizes[order.back()]; }
  // Swizzled rows of 8k vectors (k > 1) kept as k panels of 8-vector
  // (128-byte) rows, one after another in the stage: vector v of row r at
  // (v / 8) * rows * 8 + r * 8 + (v % 8 ^ r % 8) (SlotIndex). Each panel is
  // then wgmma's 128-byte-swizzle layout (FlashPlan::wgmma); with k = 1 it
  // is the row-major swizzle.
  bool panels = false;
  // Slots between rows r and r + 1 of a stage, and between a row's
  // vectors v and v + 8 (the same row's next panel).
  int64_t row_stride() const { return panels ? 8 : row_vectors(); }
  int64_t panel_stride() const { return panels ? tasks / row_vectors() * 8 : 8; }
};

// How a matmul's outputs spread over the threads: a task is `per` rows of
// one column; when there are fewer tasks than threads, `split` threads
// share a task, each summing every split-th k, and a second pass adds
// their partial sums (in slice order: deterministic) from `scratch`.
struct MatmulPlan {
  int64_t rows = 0, cols = 0, depth = 0, batches = 1;  // tile sizes
  int64_t per = 1, groups = 1, tasks = 0, split = 1;
  int64_t scratch = 0;  // offset of its partial sums in `scratch`
  // Direct (see PlanDirect): B's vectors times A's column, summed in
  // registers over the whole loop, `vectors` B vectors per tile row.
  bool direct = false;
  int64_t vectors = 0;
  // A direct matmul whose B's vectors run along k (B stored by rows of n,
  // as a Linear weight [out, in] or MLA's W_uk read transposed): each
  // thread dots its B vectors with A's rows at their k, keeping one sum a
  // row and vector over the whole loop; after it, the `vectors` lanes of a
  // column add theirs by shuffles (PlanDirect, EmitDotMatmul).
  bool dot = false;
  // A direct matmul on tensor cores (mma.sync m16n8k16): B's fragments
  // read from the ring with ldmatrix, A's from its f32 tile rounded to
  // the product's dtype (or its ring). The output's m16 x n8 tiles, row
  // of tiles by row, are spread over the warps: warp w owns tiles
  // w % tiles (+ j * warps, `per_warp` of them) and, when there are
  // fewer tiles than warps, the k chunks of 16 w / tiles (mod k_groups).
  bool mma = false;
  int64_t n8s = 0, m16s = 1, per_warp = 1, k_groups = 1;
  // A read straight from its ring (16-bit, no f32 tile): by ldmatrix on
  // tensor cores (the ring swizzled), element by element otherwise.
  bool a_ring = false;
  // A tensor-core product of one loop step into its own tile (not summed
  // across the loop): each warp owns whole n8 tiles (k_groups 1) and
  // writes them out after its k chunks.
  bool step = false;
  // A direct product's odd k chunks summed into a second set of
  // fragments (d<i>b), added to the first at the flush.
  bool paired = false;
  // A direct product whose A fragments another's loop loads (shares_a_of:
  // that product; -1 none), and the products sharing this one's.
  int shares_a_of = -1;
  std::vector<int> sharing_a;
  // Floats of scratch its flush after the loop takes (direct only).
  int64_t flush = 0;
  // A step's product whose B is a computed f32 tile (QK-norm's
  // normalized K), not a ring tile: B's fragments from that tile,
  // rounded to the product's dtype.
  bool b_tile = false;
  // B's ring holds it by rows of n (its vectors run along k, as a
  // transposed view's do): fragments by ldmatrix without .trans.
  bool b_rows = false;
  // B = X * s with s a row vector (broadcast down B's rows), X a ring
  // tile (QK-norm's K times each key's rsqrt): B's fragments are X's,
  // read from the ring, each times its column's s and rounded to the
  // product's dtype, as the f32 tile of B would be. The tile op of s
  // (b_scale) and of X (b_input); -1: none.
  int b_scale = -1, b_input = -1;
  // A computed or loaded before the loop, packed once into its mma
  // fragments in shared memory at `a_packed` (floats; -1: not packed):
  // [m16 slab][k chunk][lane], a lane's four words one 16-byte read (see
  // PlanPackedA). Its f32 tile is read only by the packing.
  int64_t a_packed = -1;
};

// Which part of a ping-pong flash loop (FlashPingPong) a flash step emits.
enum class PingPong {
  kOff,              // both warpgroups in step (or no ping-pong)
  kIssue,            // warpgroup 1's first step: its products, left in flight
  kFinishThenIssue,  // warpgroup 1's later steps: the last step's softmax, then this step's products
  kFinish,           // after warpgroup 1's loop: its last step's softmax
};

// The online softmax with rows owned by warps (tiled_flash.cc): the
// step's scores product, its stable exp, the rescaled product and row
// sum that read it, all in registers. Ops by index, -1: none.
struct FlashPlan {
  int scores = -1, exp = -1, pv = -1, sum = -1;
  // The scores' A (Q) is computed before the loop and its depth is read
  // whole: each warp loads its fragments into registers once, not at
  // every step (FlashAttention's Q in registers).
  bool a_registers = false;
  // The same, where two slabs' fragments would take too many registers
  // (head dim past 64): packed once before the loop into shared memory
  // at `a_offset` (floats), [warp][slab][k chunk][lane], each lane's
  // four words one 16-byte read a step (FlashAttention-2's Q in shared
  // memory, without the ldmatrix's address math).
  bool a_shared = false;
  int64_t a_offset = -1;
  // One slab of rows (decode), the step's keys shared out: warp w takes
  // keys 16w..16w+15 with its own running max, row sum and P@V sums,
  // and the warps' parts are combined after the loop (FlashDecoding
  // within the block). Otherwise warp w owns rows 16w..16w+15.
  bool keys_split = false;
  // One slab of rows, O's columns shared out: warp w takes the step's S
  // and P whole and columns w * FlashOColumns() on of O (no combine).
  bool cols_split = false;
  // Rows owned by warps with warps to spare: the warps come in `groups`
  // of one warp per slab, and group q takes the q-th share of each
  // step's keys (its own running max, row sums and P@V fragments) for
  // its slab; after the loop the other groups' registers are brought to
  // group 0's through the scratch (EmitFlashGroupMerge). With O's columns
  // shared out (cols_split), two groups of warps each take half of every
  // step's keys, a group's warps O's columns between them, merged the same
  // way, warp by warp of the same columns. 1: no groups.
  int64_t groups = 1;
  // Slabs of 16 rows a warp owns: 2 where the query tile has two slabs
  // for each warp (FlashAttention-2's 32 rows a warp), so that each of
  // B's fragments feeds two products; else 1. The registers (sc, o, the
  // running max and sum) have the slab as their first index.
  int64_t warp_slabs = 1;
  // Both products on Hopper's warpgroup tensor cores (wgmma, compiled for
  // sm_90a; mma.sync elsewhere): A from the warps' registers as mma.sync
  // takes it, B straight from its ring, whose rows of 8 vectors (128
  // bytes, 64 16-bit elements) swizzled as kiln swizzles them are the
  // 128-byte swizzle wgmma reads (rows of 16 vectors lie in two panels of
  // such rows: InputPlan::panels). Each group of 4 warps is one m64
  // product per slab (with warps in `groups`, each group a warpgroup
  // taking its own keys); no ldmatrix, and the accumulators are the same
  // registers in the same layout (see tiles/wgmma.cuh). Q's fragments are
  // then read from shared memory at every step (a_shared), not held in
  // registers across the loop: so held, ptxas (CUDA 13.0) gave their
  // registers to other values after the first step's product, and every
  // later step's scores came out wrong.
  bool wgmma = false;
  // With groups and O's columns shared out (MLA's decode step), the
  // scores' tiles of 8 keys shared out too: each warp of a group takes
  // FlashColumns() / FlashGroupWarps() of them over all of k, not all of
  // them (4 times over at 4 warps a group), and the group's warps trade
  // them through the scratch at `scores_offset` (floats), after a barrier
  // of the group's warps (sync_warps). The step's ring barrier keeps one
  // step's reads before the next step's writes.
  bool scores_shared = false;
  int64_t scores_offset = -1;
};

// Whether Q, loaded 8 f16 or bf16 along its depth a thread, goes from the
// loaded bits straight to the flash scores' A fragments (no f32 tile, no
// pack), normalized on the way where the scores' A is its RMSNorm
// (TiledGenerator::FlashQFromBits): Q's input op (-1: not so), the norm's
// sum and row scale ops, whether the scale comes first in op(Q, r), and
// the norm's ops, computed in registers instead.
struct QFromBits {
  int q = -1, sum = -1, scale = -1;
  bool scale_first = false;
  std::vector<int> chain;
};

// The epilogue from fragments (tiled_fragment_epilogue.cc): where every
// output is elementwise, after the loop, on the accumulators of tensor-core
// products of one k group each and the same fragment layout, each lane
// stores the outputs at its fragments' elements. `products`: those products
// (none: not planned); `ops`: by op, computed there (no tile; the
// accumulators' flushes and the ops' passes are not emitted).
struct FragmentEpilogue {
  std::vector<int> products;
  std::vector<bool> ops;
};

// A row product (TileOp::kRowMatmul, tiled_row_matmul.cc): row r of A
// [r, k], a tile, times matrix r of an input [r, k, n] read from its tensor
// where it is used. A row at a time: each thread takes `width` adjacent
// columns (16 bytes where they are the tensor's contiguous axis), one of
// `vectors` across the row, at every `groups`-th k from its group's,
// `per_thread` of them. The groups' sums of a column meet by shuffles
// where a warp holds whole groups (`shuffles`), then through `scratch`
// (floats into the scratch), added in a fixed order. `ahead`: a split
// share of one row a block, whose vectors each thread loads into registers
// before the blocks meet (split_gather), not after the combine. With a
// split share's cluster (SplitShare::cluster), k in `parts` runs of `run`
// (per_thread counts a run's): each block of a row's cluster sums its own
// run, and the runs' sums meet in order; the last block alone sums them
// the same way, run by run (1 part: k whole).
struct RowProductPlan {
  int64_t width = 1, vectors = 0, groups = 1, per_thread = 0, scratch = -1, parts = 1, run = 0;
  bool shuffles = false, ahead = false;
};

// A split loop's combine shared out (tiled_split.cc). In a cooperative
// launch (p.together) every block of a grid point is resident, so each
// waits for all of them (split_gather) and then combines and stores its
// share of the point's rows along grid axis `axis`: [split_lo, split_hi)
// of the `size` its tiles take there, `per` a block (rounded up so that
// every accumulator's share starts on 4 floats, for 16-byte loads), or a
// row's elements in `parts` runs, a block each.
// Otherwise (a grid too large to be resident at once) the last block to
// count in does it all, and its share is every row. Planned where all
// after the loop is elementwise or a row product of the share's rows (a
// share's outputs read its own rows; a row product's rows whole, or runs
// of them in a cluster) and,
// in every tile the combine writes, the axis is outermost (a share is one
// run of elements). axis -1: none (the last block only).
// `cluster`: a row product after the combine, its row's `parts` blocks a
// thread block cluster along the split axis (rank: the part), whose partial
// products over their runs of k meet in the cluster's shared memory, each
// block adding up its run of the columns (RowProductPlan::parts).
inline constexpr int64_t kMaxClusterBlocks = 8;  // a portable cluster's
struct SplitShare {
  int axis = -1;
  int64_t size = 0, per = 0, parts = 1;
  bool cluster = false;
};

}  // namespace kiln::codegen::tiled_internal

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_PLANS_H_
