// The code generator for graph-defined blocks, shared by its source files: tiled_gen.cc (the tile ops,
// phases and the loop), tiled_causal.cc (causal masks' loop ends and launch order), tiled_plan.cc (layout
// and planning), tiled_load.cc (reading input tiles), tiled_matmul.cc, tiled_direct.cc and tiled_dot.cc
// (products), tiled_flash.cc and tiled_flash_wgmma.cc (attention's scores, softmax and P@V in registers;
// Hopper's products and their pipeline), tiled_fragment_epilogue.cc (outputs computed from tensor-core
// fragments), tiled_row_matmul.cc (products of each row with a matrix of its own), tiled_register_sum.cc
// (sums kept in registers), tiled_stable_exp.cc (the online softmax), tiled_fold.cc (row folds),
// tiled_split.cc (split loops' hand-over), tiled_store.cc (the outputs' stores) and tiled_packed_a.cc (A's
// fragments packed before the loop); the plans in tiled_plans.h, tile shapes and occupancy in
// tiled_shapes.h. Internal to optimizer/codegen.
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_GENERATOR_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_GENERATOR_H_

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "optimizer/codegen/emitter.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/codegen/tiled_plans.h"
#include "optimizer/codegen/tiled_shapes.h"
#include "optimizer/tile_analysis.h"
#include "optimizer/ugraph.h"

namespace kiln::codegen::tiled_internal {

using ugraph::BlockGraph;
using ugraph::TileAxis;
using ugraph::TileInfo;
using ugraph::TileOp;
using Source = TileAxis::Source;
using codegen::MatmulPath;

class TiledGenerator {
 public:
  TiledGenerator(Emitter& e, const BlockGraph& b, std::vector<TileInfo> tiles)
      : e_(e), b_(b), tiles_(std::move(tiles)) {}

  absl::Status Generate();
  // Dynamic shared memory the kernel takes, in bytes.
  int64_t shared_bytes() const { return 4 * (buffers_ + scratch_ + ring_floats_); }
  // Registers a thread needs, roughly: a base, the loop's staged loads, and
  // the direct matmuls' sums and the copies of their vectors (and the
  // next step's scores where a flash loop issues them a step ahead).
  int64_t registers() const;
  // Bytes a block has requested at once in a loop step: the staged loop tiles whole, one load per thread of others.
  int64_t inflight_bytes() const;
  // How the slowest of its matmuls runs.
  MatmulPath matmul_path() const;
  std::vector<MatmulPath> op_paths() const;
  // Barriers a loop step takes (counted as it is emitted).
  int64_t step_barriers() const { return step_barriers_; }
  // Warps that issue tensor-core products (the most of any product).
  int64_t mma_warps() const;
  // Threads that share out a loop step's work: the warps that own the
  // flash path's rows (the others wait at its barriers), else all.
  int64_t step_threads() const {
    if (flash_.pv < 0 || flash_.keys_split || flash_.groups > 1) return b_.threads;
    return std::min<int64_t>(b_.threads / 32, matmuls_[flash_.scores].m16s) * 32;
  }
  // The flash path's groups of warps (FlashPlan::groups; 1 without it).
  int64_t flash_groups() const { return flash_.groups; }
  // Whether the flash path's warps share out O's columns (FlashPlan::cols_split).
  bool flash_cols_split() const { return flash_.cols_split; }
  // Whether a split loop's blocks can share out its combine when they are
  // all resident (p.together, a cooperative launch), and in clusters of
  // how many along the split axis (1: none): see SplitShare.
  bool split_together() const { return share_.axis >= 0; }
  int64_t split_cluster() const { return share_.cluster ? share_.parts : 1; }
  // Whether the ring's first copies go out before the wait (PlanLayout).
  bool ring_before_wait() const { return ring_before_wait_; }

 private:
  enum class Phase { kBefore, kLoop, kAfter };

  // Plans with a ring of loop tiles where one fits, else without.
  absl::Status Plan();
  absl::Status PlanLayout(int64_t max_stages, int64_t ring_bytes);
  // Declares the loop's steps: all, or this block's share of a split loop,
  // ending early under a causal mask.
  void EmitStepBounds();
  // By tile: read by nothing but ops before the loop (the flash scores' A
  // included where its fragments are taken into registers before it).
  std::vector<bool> BeforeLoopOnly() const;
  // An argument of elementwise op i that only i reads, with i's elements
  // in i's layout (Q before its scale): i may be written over it, each
  // thread reading each of its elements just before writing it. -1: none.
  int InPlaceArgument(int i) const;
  void EmitOp(int i);
  // The ops of one phase, its input tiles first: their loads go out together and one barrier covers them all.
  void EmitPhase(Phase phase);
  // Issues the staged loop tiles' loads for the first step (before the loop) or the next one (inside it).
  void EmitPrefetch(bool first);
  // Whether loop input i is prefetched through registers (not the ring), and whether any is.
  bool Prefetched(int i) const;
  bool RegisterPrefetch() const;
  // Whether the loop's whole steps run in a loop of their own (Generate):
  // the steps whose tiles, and the ones they copy into the ring, are all
  // whole, where every copy of the block is a whole aligned vector
  // (ring_whole), with no tails' code (their checks fold away); the rest
  // take the general step after it. Which kernels, and why: at the
  // definition (tiled_gen.cc).
  bool LeanLoop() const;
  int64_t BlockSteps() const;  // a block's share of a concrete loop's steps (one axis); else 0
  // A loop step: its range (k0, kn), its ops, the barrier before the next.
  // With lean_step_, a whole step whose ring copies are whole (the loop
  // of whole steps, Generate): kn is the tile, and the copies unchecked.
  void EmitLoopStep(bool loop_axes);
  absl::Status EmitPingPongLoops(bool loop_axes);  // under FlashPingPong, one for each warpgroup
  bool lean_step_ = false;
  // Declares `start` and `length`: the first loop coordinate of step
  // `step` and how many of its elements are in range; with `guarded`, none
  // past this block's last step (step_end).
  void EmitStepRange(const std::string& start, const std::string& length, const std::string& step, bool guarded);

  // The ring: the loop's vector tiles copied asynchronously (cp.async) into
  // `stages_` shared-memory stages, so that a block has stages_ - 1 steps'
  // tiles in flight while it computes one. Each thread reads back only the
  // slots it copied itself (conversion into the tile, or a direct matmul),
  // so a stage is reused without a barrier. PlanRing marks the inputs;
  // EmitRingPrologue issues the first stages_ - 1 steps before the loop,
  // EmitRingStep the step stages_ - 1 ahead and waits for this one.
  // Up to `max_stages` stages in `ring_bytes` (Plan picks both): 3 steps
  // in flight in kRingBytes where the tiles are small (most of what a
  // streaming kernel needs, leaving room for a second block on the SM),
  // more room where a step's tiles are large.
  static constexpr int64_t kRingBytes = 96 * 1024, kLargeRingBytes = 192 * 1024;
  // The most stages (5: only a streaming loop, Plan) and steps it prefetches into L2 before its wait.
  static constexpr int64_t kStreamingStages = 5, kPrefetchedSteps = 3;
  void PlanRing(int64_t max_stages, int64_t ring_bytes, int64_t* loop_registers);
  // What decides the contents of input i's ring slots (tensor, dtype,
  // vectors, and per task dim its size, tensor axis and tile axis); empty
  // where its view is not just permutes and leading expands.
  std::vector<int64_t> RingLayout(int i) const;
  // Inputs that share a ring take each other's swizzle and cross reads.
  void ShareRings();
  // Whether some ring is read by threads other than the one that copied
  // it; then a step waits for its stage, takes a barrier, and only then
  // issues the copies that reuse the previous step's stage.
  bool BarrierFirst() const;
  void EmitRingIssue(const std::string& step, const std::string& stage);
  // Declares ring_whole: whether every copy the block issues at a whole
  // step (every loop coordinate in range) is a whole vector, in range and
  // aligned. Such steps, all but a block's last in most kernels, issue
  // their copies with no checks (EmitWholeCopies): the checked copies took
  // about 25 instructions and two branches each.
  void EmitRingWhole();
  // With `prefetch`, L2 prefetches of the same elements (EmitWaitForPriorGrid).
  void EmitWholeCopies(int i, bool prefetch = false);
  // The wait for the kernel before (wait_for_prior_grid: the executor launches
  // kernels early), at the block's first grid point, after its index math and
  // ring_whole; and the trigger that lets the kernel after launch early
  // (launch_dependents). A streaming loop (StreamsAhead) prefetches its first
  // steps (stages_ - 1, at most kPrefetchedSteps; with 5 stages, 4 steps ran
  // 0.4 us slower than 3) into L2 before the wait and triggers stages_ steps
  // before its end, so that the next kernel's blocks fetch their first tiles
  // while its last ones drain. Other kernels trigger right after the wait.
  // Where ring_first_, the ring's prologue goes right after the wait, or
  // before it (ring_before_wait_: see RingBeforeWait in tiled_plan.cc).
  void EmitWaitForPriorGrid();
  // Whether the block's loop streams: no flash path, and at least
  // 4 x stages_ steps a block. On the H100, back to back, the prefetch and
  // the late trigger took rmsnorm_linear_bs1 19.6 -> 18.6 us and
  // gated_mlp_bs8 24.2 -> 22.8 (the trigger after the wait alone: 19.3 and
  // 23.8); they took the flash kernels, LoRA's and MLA's short loops 0.1-2 us
  // slower than the trigger after the wait.
  bool StreamsAhead() const;
  // The ring inputs that copy into a ring of their own (not ring_of
  // another's), in op order.
  std::vector<int> RingOwners() const;
  void EmitRingPrologue();
  // Whether input i's ring copies go to the block's last threads (see
  // EmitStaged).
  bool CopiesFromLast(int i) const;
  void EmitRingStep();
  // Slot `task` of input i's ring at `stage`. A swizzled ring (read across
  // threads by ldmatrix) keeps vector v of row k at v ^ (k % 8) within its
  // row, so that 8 rows' vectors at one column fall in different banks. Rows
  // of 4 or 2 vectors (8 rows span 2 or 4 rows of banks) xor v with k / 2 % 4
  // or k / 4 % 2 instead: the same 8 rows again fill the 8 bank groups.
  std::string RingSlot(int i, const std::string& stage, const std::string& task) const {
    return absl::StrCat("ring", i, "[", stage, " * ", inputs_[i].tasks, " + ", SlotIndex(i, task), "]");
  }
  // Where task `task` of input i sits within a stage (swizzled or not,
  // in panels or not).
  std::string SlotIndex(int i, const std::string& task) const {
    const InputPlan& plan = inputs_[i];
    if (!plan.swizzle) return task;
    const int64_t rv = plan.row_vectors();
    if (plan.panels) {
      return absl::StrCat("((", task, ") % ", rv, " / 8 * ", plan.panel_stride(), " + (", task, ") / ", rv,
                          " * 8 + (((", task, ") ^ ((", task, ") / ", rv, ")) & 7))");
    }
    return rv % 8 == 0 ? absl::StrCat("((", task, ") ^ ((", task, ") / ", rv, " & 7))")
                       : absl::StrCat("((", task, ") ^ ((", task, ") / 8 & ", rv - 1, "))");
  }
  // Whether rows of `row_vectors` 16-byte vectors can be swizzled (SlotIndex).
  static bool Swizzles(int64_t row_vectors) {
    return row_vectors % 8 == 0 || row_vectors == 4 || row_vectors == 2;
  }
  // Element (row, col) of input i's rank-2 ring tile at `stage`, widened to
  // f32 (vectors run along its last axis, tasks in row-major order).
  std::string RingElement(int i, const std::string& stage, const std::string& row, const std::string& col) const;

  // Input tiles. A staged input issues its loads into registers (raw bits)
  // and converts them into its buffer later, so that a thread has all its
  // loads in flight at once and the next loop step's loads overlap this
  // step's work; a direct one (too many loads per thread to hold) loads and
  // converts element by element.
  void PlanInput(int i, int64_t* registers);
  // The coordinates of input i's task `task` ("l": the thread's task `it`
  // under OpenThreadTasks, read from the thread and `it` apart).
  std::vector<std::string> TaskCoords(int i, const std::string& task, const std::string& it = "it");
  // Loads task `task` of input i into `raw` (registers), or, with `slot`
  // set, copies it asynchronously into that ring slot.
  void EmitIssue(int i, const std::string& task, const std::string& raw, const std::string& slot = "");
  // Input i's tensor (a kernel parameter) and the element offset of its
  // tile coordinates `coords` at this block and step.
  std::string InputPointer(int i) const;
  std::string InputOffset(int i, const std::vector<std::string>& coords) const;
  // Whether the vector at `coords` (its first element) lies wholly in range
  // (empty: always).
  std::string WholeVector(int i, const std::vector<std::string>& coords) const;
  void EmitConvert(int i, const std::string& task, const std::string& raw);
  // The staged loads' issue (into raw registers) or their conversion.
  void EmitStaged(int i, bool issue);
  // Opens (and closes) the loop over this thread's tasks of input i, `it`
  // and `l` (task threadIdx.x + it * threads, or with `from_last`
  // threads - 1 - threadIdx.x + it * threads), skipping l past its tasks.
  void OpenThreadTasks(int i, bool from_last = false);
  // The thread's part of its tasks (unsigned), as Unravel takes it.
  std::string ThreadTask(bool from_last) const;
  // Whether direct tensor-core products p and q can share one loop and its
  // A fragments (same A from its ring, same tiles and k chunks).
  bool SameMmaLoop(int p, int q) const;
  void CloseThreadTasks(int i);
  void DeclareRaw(int i);
  void EmitDirect(int i);
  void EmitElementwise(int i);
  void EmitMatmul(int i);
  void EmitReduce(int i);
  // Whether a fold of tile x along `axis` takes a warp per output (lanes
  // along the axis, then shuffles): where the axis has 32 elements or more
  // and they are adjacent. Along an outer axis (a column sum: QK-norm's rms
  // of K over its head dim) the lanes would all hit one bank, so a thread
  // takes each output and adjacent threads read adjacent elements.
  bool FoldsByWarp(int x, int axis) const {
    const std::vector<int64_t> sizes = Sizes(tiles_[x]);
    return sizes[axis] >= 32 && Product(sizes, axis + 1, sizes.size()) == 1;
  }
  // Folds each row of tile x along `axis` (sum, or max from -inf) into `v`, by
  // warp or by thread (FoldsByWarp). Opens the loop over rows `o` and a block
  // where one thread holds the row's `v`; CloseRowFold closes both. With
  // `keeps` (a condition on the row's coordinates and "j", the element's along
  // `axis`), only elements it holds for are folded.
  void OpenRowFold(int x, int axis, bool max, const std::string& keeps = "");
  // The coordinate along axis d of tile x of row `o` of a fold along `axis`.
  std::string FoldCoord(int x, int axis, int d) const;
  void CloseRowFold();
  void EmitAccumulate(int i);
  void EmitStores();
  // The tile axis along which output `o` is stored 16 bytes at a time (its
  // innermost that varies, contiguous in the tensor, whole vectors), or -1.
  int StoreInner(const ugraph::OutputSaver& o) const;
  static int StoreWidth(DType dtype);  // elements in 16 bytes; 1 where not stored by vectors
  // A split loop's hand-over after the loop: partials out, a counter per grid point; it opens the going-on
  // blocks' part (the caller closes it). There EmitSplitShare: the block's rows and their sums.
  void EmitSplitCombine(const std::string& point, const std::string& split);
  void EmitSplitShare(const std::string& split);
  bool together_ = false;  // emitting the code of blocks going on together (p.together), not the last's alone
  // The workspace's partials of the point, `mine` this block's (before the
  // flush where FlashPartialsDirect, else in EmitSplitCombine).
  void EmitSplitPartials(const std::string& point, const std::string& split);
  // Whether the flash flush writes every partial of a split loop from the
  // warps' registers, 8 bytes a store, not through the tiles; FlushTarget(i)
  // is where it writes tile i (-1: the scores' running max).
  bool FlashPartialsDirect() const;
  std::string FlushTarget(int i) const;

  // Synchronization: a buffer written since the last __syncthreads is
  // "dirty"; reading it is safe without a barrier only for the thread that
  // wrote the element, i.e. when both sides spread the tile alike and index
  // it alike: linearly (OpenLinear: element l on thread l % threads), or a
  // share's elements so (OpenShareLinear at width 1); kOther: any other way.
  enum class Spread { kOther, kLinear, kShare };
  void Read(int buffer, Spread reader);
  void Wrote(int buffer, Spread writer);
  void Sync();
  // Whether barriers now are reached from more than one place in the code (the ping-pong loops): Sync emits
  // the unaligned form.
  bool unaligned_barriers_ = false;
  // Elements of an axis that can be in range (the tile size, or less where
  // the tensor is known to be smaller): what work is spread over.
  static int64_t Useful(const TileAxis& a);

  // Opens the linear loop over a tile's elements: `for (int l = ...)`.
  void OpenLinear(int64_t elements);
  // Splits `linear` over `sizes`, the axes in `order` (fastest last); emits
  // one int per axis of size above 1 (the others are "0"). With `thread`,
  // `linear` is a thread's task l = thread + it * threads (OpenThreadTasks),
  // and each coordinate is written from `thread` and `it` apart where its
  // stride divides the threads: the compiler then sees that a thread's tasks
  // differ by constants (one address and immediate offsets, not a 64-bit
  // offset held for each; causal prefill's two-slab kernel spilled 204 bytes,
  // 28 with them). `it` names the thread's task number (a constant where the
  // caller wants one task's coordinates).
  std::vector<std::string> Unravel(const std::vector<int64_t>& sizes, const std::vector<int>& order,
                                   const std::string& linear, const std::string& thread = "",
                                   const std::string& it = "it");
  // Whether Unravel with a thread writes every coordinate free of `it` but
  // the slowest, `axis`, which moves by `per_it` a task (then a task's
  // offset, through a view without a reshape, moves by a constant).
  bool TaskStep(const std::vector<int64_t>& sizes, const std::vector<int>& order, int* axis, int64_t* per_it) const;
  // The element of tile op `a` at element `l` (coordinates `coords`) of a
  // tile shaped `out`: broadcast over size-1 and missing leading axes.
  std::string Operand(int a, const TileInfo& out, const std::vector<std::string>& coords,
                      const std::string& linear = "l");
  bool SameShape(int a, int b) const { return Sizes(tiles_[a]) == Sizes(tiles_[b]); }

  // The first tensor coordinate a tile axis covers at this block and step,
  // and how many of its elements are in range (i64 expressions).
  std::string Start(const TileAxis& a) const;
  std::string Length(const TileAxis& a) const;
  std::string Global(const TileAxis& a, const std::string& coord) const;
  // "c0 < n1 && ..." over the axes that can have tails; empty when none.
  std::string InRange(const TileInfo& t, const std::vector<std::string>& coords, int skip = -1) const;

  // Value `v` of tile x as a product in `dtype` takes it: rounded to dtype,
  // unless dtype is f32 or x is an input stored in dtype already.
  std::string RoundedTo(DType dtype, int x, const std::string& v) const;

  std::string Buffer(int i) const { return absl::StrCat("x", i); }
  std::string Raw(int i) const { return absl::StrCat("raw", i); }

  Emitter& e_;
  const BlockGraph& b_;
  std::vector<TileInfo> tiles_;
  std::vector<Phase> phase_;
  std::vector<int> fused_into_;     // a matmul or sum added straight into this accumulator, or -1
  std::vector<int> fused_from_;     // an accumulator: the matmul or sum that adds into it, or -1
  std::vector<double> fused_scale_;  // a sum: the constant it is scaled by on its way there (1: none)
  std::map<int, Spread> dirty_;  // buffer -> how it was written
  std::vector<InputPlan> inputs_;  // by tile op (kInput ops only)

  // The tile op matmul i takes B's fragments from: its B, or the ring
  // tile a column-scaled B is read from (MatmulPlan::b_scale).
  int BInput(int i) const { return matmuls_[i].b_scale >= 0 ? matmuls_[i].b_input : b_.tile_ops[i].args[1]; }
  // Whether a step product's B is X * s as MatmulPlan::b_scale reads it:
  // X and s; X's only other readers are ring folds' chains.
  std::optional<std::pair<int, int>> ScaledB(int i, const std::vector<int>& uses) const;
  // Matmuls summed into an accumulator whose B, a loop tile only they read,
  // goes through registers, never a tile (see the definition).
  void PlanDirect(const std::vector<int>& uses);
  // The scratch the flushes after the loop share (direct_scratch_): the
  // most any direct matmul or register sum takes (not the flash path's),
  // or a split loop's combine, after them, for its factors.
  void PlanFlushScratch();
  void EmitDirectMatmul(int i);
  void EmitDirectFlush();
  // The dot form (MatmulPlan::dot, tiled_dot.cc): its plan, step and flush.
  bool PlanDot(int i, const std::vector<int>& uses, int64_t* registers);
  void EmitDotMatmul(int i);
  void EmitDotFlush(int i);
  // A's element (m, k) of direct matmul i, from its ring or its f32 tile,
  // rounded to the product's dtype (code: m and k are the caller's names).
  std::string DirectA(int i, const std::string& k) const;
  // Opens the loops over the elements of tensor-core product i's fragments
  // that this lane holds: j (its tiles), h (the fragment's 4), with m0, v and
  // the element's row r declared; CloseFragmentElements closes them.
  void OpenFragmentElements(int i);
  void CloseFragmentElements();
  // The sums of product i at the lane's fragment element (j, h): its
  // accumulator fragments, plus their pair's (MatmulPlan::paired).
  std::string FragmentSums(int i) const;
  // The lanes of a warp that hold the same columns of a direct matmul whose
  // B rows take `vectors` loads (thread t loads vector t % vectors).
  static int64_t SharingLanes(int64_t vectors);
  // The tensor-core form (MatmulPlan::mma): true where it applies;
  // `step`: a product of one step into its own tile (PlanStepMma).
  bool PlanMma(int i, bool step);
  // Matmuls that are no accumulator's (the scores of attention, Q@K per
  // key tile) on tensor cores where B is a loop tile of the ring that only
  // they read: B never widens into an f32 tile.
  void PlanStepMma(const std::vector<int>& uses);
  // Whether matmul i's B is a loop input with vectors that only it reads,
  // in the product's dtype, its vectors along axis rank - 1 - from_last.
  bool VectorB(int i, const std::vector<int>& uses, int from_last) const;
  // Such a B with its vectors along N (what the direct forms need).
  bool DirectB(int i, const std::vector<int>& uses) const { return VectorB(i, uses, 0); }
  // Such a B with its vectors along k (b_rows: a step product's rows of n).
  bool RowsB(int i, const std::vector<int>& uses) const { return VectorB(i, uses, 1); }
  // Whether matmul i, with 16-bit operands, reads a computed matrix tile
  // as B (a step's product may take it from its f32 tile).
  bool ComputedB(int i) const;
  // Tile x as a matrix: all axes but the last two have size 1 (a batch
  // tiled one per block). Its rows and columns axes.
  bool IsMatrix(int x) const;
  const TileAxis& RowAxis(int x) const { return tiles_[x].axes[tiles_[x].axes.size() - 2]; }
  const TileAxis& ColAxis(int x) const { return tiles_[x].axes.back(); }
  // Coordinates of matrix tile x at row `row`, column 0.
  static std::vector<std::string> RowCoords(const TileInfo& t, const std::string& row) {
    std::vector<std::string> coords(t.axes.size(), "0");
    coords[coords.size() - 2] = row;
    return coords;
  }
  // Accumulator fragments (mma) or register sums of direct matmul mm
  // multiplied by stable exp s's step factor, row by row.
  void EmitRegisterRescale(int mm, int s);
  // Whether accumulator acc's rescale factor (if any) depends on its row
  // only, as sums in registers need.
  bool RowRescale(int acc) const;
  void EmitMmaMatmul(int i);
  void EmitMmaFlush(int i);
  // Declares the lane's fragment coordinates (lane, warp, g, t2).
  void DeclareMmaLane();
  // Declares, for matmul i's j-th tile of this warp, its first row (m0)
  // and its n8 column of tiles (v). And the warp's k group.
  void DeclareMmaTile(int i);
  std::string MmaGroup(int i) const;
  // Whether each warp's tiles of matmul i lie in one row of tiles (one A
  // fragment per k chunk serves them all).
  bool SharedA(int i) const;
  // Declares `fa`, A's fragment of matmul i at rows `m0` and k chunk c;
  // with `into`, writes that fragment (unsigned[4]) instead.
  void EmitMmaA(int i, const std::string& m0 = "m0", const std::string& into = "");
  // EmitMmaA's reads of A's f32 tile, each pair rounded to the product's dtype.
  void EmitMmaAFromTile(int i, const std::string& m0, const std::string& fa);
  // Products whose A the loop reads unchanged every step: A packed into its
  // fragments before the loop (MatmulPlan::a_packed).
  void PlanPackedA();
  int64_t PackedAFloats(int i) const;
  void EmitPackedA();
  // A's fragments of product mm from its f32 tile into shared memory at
  // `offset` (floats), [m16 slab][k chunk][lane], the warps taking them in
  // turn (no barrier after).
  void EmitPackFragments(int mm, int64_t offset);
  // `value`, an operand element of matmul i at the lane's k (chunk c, its
  // t2 plus `offset`), where that k is in range, else 0: a computed
  // operand's k tail may hold inf, and inf * 0 is NaN.
  std::string InRangeK(int i, int offset, const std::string& value) const;
  // Declares `fb`, B's fragment of matmul i at k chunk c (`k` the lane's
  // ldmatrix row) and n8 column `v`.
  void EmitMmaB(int i, const std::string& v);
  // A column-scaled B's fragment pair `fb` (n8 column `v`) times the
  // lane's column of the scale (MatmulPlan::b_scale); nothing otherwise.
  void EmitScaleB(int i, const std::string& fb, const std::string& v);
  // One k chunk of flash product mm into the fragments `acc`[sl][v] of each of
  // the warp's slabs sl, for `count` columns of tiles from column `first` (A
  // in `fa`[sl]): B's fragments two columns of tiles per ldmatrix from the
  // ring, its rows from `k_rows` (a multiple of 16; the lane adds its own).
  void EmitFlashProducts(int mm, const std::string& acc, int64_t count, const std::string& first,
                         const std::string& k_rows, const std::string& stage = "stage");
  // Whether both flash products can take wgmma (FlashPlan::wgmma).
  bool FlashWgmma() const;
  // One step's flash product mm by wgmma into `acc`[sl] (flattened), for
  // `chunks` k chunks, `fill` declaring the chunk's A fragments `fa`[sl]
  // (c the chunk); the code of the mma.sync form goes under #else.
  // With `wait` false the products are left in flight (committed):
  // EmitFlashWgmmaWait waits for them, after the code between.
  // B from the ring's stage `stage` (an expression).
  void EmitFlashWgmma(int mm, const std::string& acc, int64_t chunks, const std::function<void()>& fill,
                      const std::function<void()>& otherwise, bool wait = true, const std::string& stage = "stage");
  // Waits until at most `pending` groups of products are in flight.
  void EmitFlashWgmmaWait(int mm, const std::string& acc, int pending = 0);
  // Whether the loop of whole steps takes its flash products in a pipeline
  // (FlashAttention-3's intra-warpgroup overlap): step j issues its scores'
  // wgmma, then step j - 1's P@V, and runs its softmax while P@V does; P@V of
  // the last whole step follows the loop. The ring then runs stages - 2 steps
  // ahead (RingAhead): P@V reads the stage of the step before.
  bool FlashPipelined() const;
  // The conditions of FlashPipelined but the loop of whole steps.
  bool FlashPipelineable() const;
  bool FlashAheadFits() const;  // whether FlashScoresAhead's registers fit, the loop aside
  bool AheadRegistersFit() const;  // its register rule alone (and 4 stages or more)
  // Whether that pipeline also issues each whole step's scores a step ahead
  // (FlashAttention-3's full overlap; how, at the definition).
  bool FlashScoresAhead() const;
  // Whether the loop of whole steps runs its two warpgroups half a step
  // apart, each in a loop of its own (tiled_flash_ping_pong.cc).
  bool FlashPingPong() const;
  PingPong ping_pong_ = PingPong::kOff;
  // A flash step of warpgroup 1 in ping-pong (ping_pong_ says which part).
  void EmitFlashPingPongStep();
  // A flash step once its scores are done in `sc`: the softmax, and
  // pipelined (`piped`) O brought to the new max after the last step's
  // P@V and P packed for the next, else P@V itself.
  void EmitFlashAfterScores(bool piped, bool ahead);
  // The flash scores' product into `acc` (declared and zeroed by the
  // caller) from the ring's stage `stage`, waited for where `wait`; its A
  // fragments of k chunk c (fa); shared out by a group (FlashPlan::scores_shared).
  void EmitFlashScores(const std::string& acc, bool wait, const std::string& stage);
  void EmitFlashScoresA();
  void EmitFlashScoresShared(const std::string& stage);
  // B by rows' ldmatrix address: column of tiles `tile`, k chunk c, in `stage`.
  std::string FlashRowsAddress(int mm, const std::string& tile, const std::string& stage) const;
  // Before the loop of whole steps (FlashScoresAhead): scores0, scores1 and the first step's.
  void EmitFlashScoresPrologue();
  // The first column of tiles of a warp's scores (DeclareFlashOffsets).
  std::string FlashScoresFirst() const;
  // A step's P@V into O: `fill` declares k chunk c's A fragments fa[sl],
  // `col0` the step's first key of the warp's (see EmitFlashStep), B from
  // the ring's stage `stage`; by wgmma (left in flight unless `wait`) with
  // the mma.sync form under #else.
  void EmitFlashPv(const std::function<void()>& fill, const std::string& col0, bool wait = true,
                   const std::string& stage = "stage");
  // The previous whole step's P@V (FlashPipelined): A from `pp`, B from
  // the ring's stage `pstage`, left in flight on Hopper.
  void EmitFlashPreviousPv();
  // After the loop of whole steps: the last one's P@V, waited for.
  void EmitFlashPipelineDrain();
  // How many steps ahead of the one it computes the ring's copies run.
  int64_t RingAhead() const;
  // The fold that computes the scores' column scales (QK-norm's rsqrt of
  // K's sum of squares) where the flash step emits it between issuing the
  // scores' wgmma and waiting for it, so the fold, its barrier and the
  // products overlap; -1 where it is emitted in op order (no wgmma, or
  // warps that idle through the step, which cannot take its barrier).
  int DeferredScaleFold() const;
  // The scales' tile where that fold runs a step ahead with the scores
  // (FlashAheadFits), else -1: a whole step folds the next step's K into
  // the half of the doubled tile for that step's parity (FoldAheadHalf),
  // with no barrier of its own; the prologue folds the first step.
  int FoldAhead() const;
  std::string FoldAheadHalf(const std::string& step) const;
  void EmitFoldAhead(const std::string& step, const std::string& stage);
  // Whether flash product mm is the scores with B's columns scaled (then on the scores, not B).
  bool ScalesFlashScores(int mm) const;
  // Whether flash product mm reads B two columns of tiles per ldmatrix.
  bool FlashPairsB(int mm, int64_t count) const;
  // The lane offsets DeclareFlashOffsets declares for flash product mm (none where its B is
  // not read in pairs); with B by rows, those of its first k chunks (FlashRowsOffsets).
  int64_t FlashOffsets(int mm, int64_t count) const;
  int64_t FlashRowsOffsets(int mm) const;
  // Declares bo<mm>: the shared-memory address in stage 0 of the lane's
  // ldmatrix row for each pair of B's columns of tiles, rows 0-15 (see
  // EmitFlashProducts); for B by rows, of the first pair at each of the
  // first k chunks. A step adds its stage's and k chunk's bytes: the
  // swizzle of rows 16 apart is the same (RingSlot), so only those change.
  void DeclareFlashOffsets(int mm, int64_t count, const std::string& first);
  // A warp's columns of S (n8 tiles) in a step: its own 16 keys (keys
  // split), its group's share, or all of them.
  int64_t FlashColumns() const;
  void EmitKeysSplitFlush();
  // Groups > 1: the other groups' running maxes, row sums and P@V fragments
  // added into group 0's registers, each brought to the larger max; its scratch floats.
  void EmitFlashGroupMerge();
  int64_t FlashGroupScratch() const;
  // Opens the loop over the warp's slabs (`sl`), unrolled: the registers it indexes stay so.
  void OpenFlashSlabs();
  // The floats of FlashPlan::a_shared's fragments (or DeclareSharedRowsA's).
  int64_t FlashSharedAFloats() const;
  // With O's columns shared out, Q's fragments into every warp's registers
  // through one packed copy in shared memory (at FlashPlan::a_offset).
  void DeclareSharedRowsA(int a, int64_t chunks, bool from_bits);
  // Where the lane's words of slab `sl` and k chunk `c` lie among them.
  std::string FlashSharedAIndex() const;
  // Q from its loaded bits straight to those words (QFromBits in
  // tiled_plans.h; tiled_packed_a.cc), and that store.
  QFromBits FlashQFromBits() const;
  void EmitFlashQFromBits(int i);
  // O's columns of tiles a warp holds, and the first (code), where the
  // warps share them out (FlashPlan::cols_split); else all, from 0.
  int64_t FlashOColumns() const;
  std::string FlashOFirst() const;
  // The warps of a group of flash warps: one a slab, or (O's columns
  // shared out) the block's warps over its groups.
  int64_t FlashGroupWarps() const;
  // Whether tile i is the flash path's O or row-sum accumulator, which
  // its flush writes whole after the loop (no zeros before it): it may
  // lie in the ring's space.
  bool FlashAccumulator(int i) const;
  // Whether warps past the query tile's slabs idle in the flash code (rows
  // owned by warps, fewer slabs than warps, no groups); Open declares the
  // warp's first row `m0` inside that guard (and with groups, the warp's
  // group `kg`), Close ends it.
  bool FlashWarpsIdle() const;
  void OpenFlashWarps();
  void CloseFlashWarps();
  FlashPlan flash_;
  // Whether PlanFlash may form groups (Plan clears it where no layout fits).
  bool flash_groups_allowed_ = true;
  void PlanFlash(const std::vector<int>& uses);
  // After PlanNeeded: the scores and exponentials need no tiles.
  void DropFlashTiles();
  void DeclareFlash();
  void EmitFlashStep();
  // After the loop: the registers into the accumulators and shift rows.
  void EmitFlashFlush();
  // Where A may be read from its ring (sets MatmulPlan::a_ring).
  void PlanARing(int i);
  // Sums fused into an accumulator whose operand is an elementwise chain
  // of one ring tile (and constants), summed along its last axis: each
  // thread sums the chain over the vectors it copied, in registers, for
  // the whole loop (no tile, no barrier); after the loop the threads'
  // partial sums are added in task order (EmitRegisterSumFlush).
  void PlanRegisterSums();
  // The ring input chain x reads, or -1 where x is no such chain.
  int ChainSource(int x) const;
  // The chain x's value at one element whose ring value is `value`; with
  // `leaf`, the chain down to op `leaf` (a fold's epilogue, on its result).
  std::string ChainValue(int x, const std::string& value, int leaf = -1) const;
  void EmitRegisterSum(int i);
  void EmitRegisterSumFlush();
  // Sums of one loop step (not added into an accumulator) whose operand is
  // such a chain, only they read it, of a rank-2 ring tile: the fold reads
  // the ring's elements and runs the chain on them (QK-norm's sum of K's
  // squares along its head dim), so neither the chain nor the ring tile
  // needs a tile of its own, nor the step a pass and a barrier for them.
  void PlanRingFolds(const std::vector<int>& uses);
  // x = c * y or y * c, c a constant, y of x's shape: y and c.
  std::optional<std::pair<int, double>> ConstantFactor(int x) const;
  // x = c * sum or sum * c, c a constant: the sum and c.
  std::optional<std::pair<int, double>> ScaledSum(int x) const;
  // `value` times the scale sum i takes on its way into its accumulator.
  std::string Scaled(int i, const std::string& value) const;
  // Stable exps (tiled_stable_exp.cc): each keeps a shift per row in
  // shared memory (shift<i>), and a running max the step's rescale factor
  // (rescale<i>), which the accumulators that follow it take.
  TileInfo ShiftRowTile(int i) const;
  // The row of stable exp i that element `coords` of tile t (broadcast
  // against the rows, aligned right) belongs to.
  std::string RowOf(int i, const TileInfo& t, const std::vector<std::string>& coords) const;
  void PlanShifts();
  void DeclareShifts();
  // Running maxes to -inf, before the loop.
  void EmitShiftReset();
  void EmitStableExp(int i);
  // The condition that stable exp i's causal mask keeps the element of its
  // argument's tile at `row` and `col` (tile coordinates along the mask's
  // axes); empty without a mask.
  std::string MaskKeeps(int i, const std::string& row, const std::string& col) const;
  // The mask's rows' and keys' offset: r + offset >= c keeps (an i64 expression).
  std::string MaskOffset(int i) const;
  // The first loop step that holds only keys the causal mask hides from
  // every row of this block (an i64 expression), where every accumulator
  // follows the one masked running max; else empty.
  std::string CausalStepEnd() const;
  // The stable exp whose causal mask ends the loop early (CausalStepEnd),
  // or -1.
  int CausalExp() const;
  // The grid axis along the causal mask's rows, where the loop ends early,
  // or -1: its blocks run last-first, so that the longest start first and
  // the short ones fill the last wave.
  int CausalGridAxis() const;
  // Whether a causal grid axis has launch dims above it: then it runs slowest
  // (BlockIndex). The launch order walks the x dim fastest, and with the
  // causal axis on x each head's longest tiles would start with its short
  // ones, the last heads' among the last blocks. All the longest tiles first
  // instead (on an H100, causal_prefill 463.8 -> 420.0 us), the shortest last.
  bool CausalOrder() const;
  // Declares vb0..vb2, the block's index along each launch dim, where CausalOrder.
  void DeclareBlockIndices();
  // Who counts a block out of a shared combine (split_leave) and frees the
  // counters (split_count_out), and whether after the gather's barrier.
  bool CountOutAfterBarrier() const;
  std::string CountOutThread() const;
  // The block's index along launch dim g (blockIdx, or vb<g>).
  std::string BlockIndex(int g) const;
  SplitShare share_;  // tiled_plans.h
  void PlanSplitShare();
  // Where tile t has the share's axis (of size above 1), or -1.
  int ShareAxisOf(const TileInfo& t) const;
  // The linear loop over the elements of tile t in this block's share, `width`
  // a thread at a time (all of them where t does not have the axis).
  void OpenShareLinear(const TileInfo& t, int width);
  // The same loop, a warp per element (its lanes take the blocks).
  void OpenShareRows(const TileInfo& t);
  // The elements [first, end) of tile t in this block's share, as code.
  std::pair<std::string, std::string> ShareRange(const TileInfo& t) const;
  // The elements in that range: all of the tile's but in a share.
  int64_t ShareElements(const TileInfo& t) const;
  // How OpenShareLinear(t, 1) spreads them: linearly where they are all.
  Spread ShareSpread(const TileInfo& t) const;
  // Whether `width` elements a thread can start at the share's first.
  bool ShareAligned(const TileInfo& t, int width) const;
  // A condition on an output's coordinates: in this block's share (or the
  // first block's, for outputs without the axis); empty without a share.
  std::string ShareKeeps(const TileInfo& t, const std::vector<std::string>& coords) const;
  // A split loop's combine of accumulator i (not a row sum) at `offset` in a
  // block's partials, over the block's share (all of it for the last block);
  // its vectors `width` floats, CombineGroup lanes each, (ahead) its loads.
  int64_t CombineGroup(int i, int64_t offset, int64_t floats, int* width) const;
  void EmitCombineLoop(int i, int64_t offset, int64_t floats, bool ahead);
  void EmitCombineVectors(int i, int64_t offset, int64_t floats, int width, int64_t group);
  void EmitCombineAcrossWarps(int i, int64_t offset, int64_t floats, int width, int64_t group);  // loaded ahead
  // A split loop's running maxes: out to the workspace after the accumulators,
  // or (combine) the max over the blocks into shift<i>, each block's factor to
  // it (SplitFactors) and the row sums (SplitRowSum), then a barrier.
  void EmitSplitShifts(const std::string& split, int64_t floats, bool combine);
  // The combine of running max s and its row sums: a warp per row where a
  // block combines few rows (WarpPerSplitRow) and the blocks are many, or a
  // thread per row.
  bool WarpPerSplitRow(const TileInfo& rows) const;
  void EmitWarpSplitShift(int s, int64_t floats, const std::vector<std::pair<int, int64_t>>& sums);
  void EmitThreadSplitShift(int s, int64_t floats, const std::vector<std::pair<int, int64_t>>& sums);
  // The accumulators, in the workspace's order, and each one's offset in a
  // block's partials (floats).
  std::vector<std::pair<int, int64_t>> SplitAccumulators() const;
  // Whether accumulator `acc` follows a running max and holds one value per
  // row of it, element l row l: the combine adds it in the pass that takes
  // the factors.
  bool SplitRowSum(int acc) const;
  // Where the combine keeps running max s's factors, [block][row], in the
  // flush scratch (PlanFlushScratch sizes it).
  std::string SplitFactors(int s) const;
  // What block q's partial sum of accumulator `acc` (a rescaled one) at
  // `coords` is multiplied by in the combine.
  std::string SplitFactor(int acc, const std::vector<std::string>& coords) const;
  // Whether accumulator `acc`'s elements go in runs of four along its
  // innermost axis that share one row of its rescale (or it has none).
  bool FourShareARow(int acc) const;
  std::vector<int64_t> shift_offsets_, rescale_offsets_;  // by op, in floats, or -1
  // Which ops must run: outputs, accumulators, and what they read, less
  // what is read from the ring instead of a tile (sets InputPlan::tile).
  void PlanNeeded();
  std::vector<int> register_sum_;  // by reduce op: its chain's ring input, or -1
  std::vector<int> register_root_;  // by reduce op: the chain each element runs (constant factors peeled off)
  std::vector<int> ring_chain_;  // by op: the ring input a ring fold's chain computes it from, or -1
  // A ring fold's epilogue: the elementwise ops on its result alone (and
  // constants), each the only reader of the one before (QK-norm's scale,
  // epsilon and rsqrt of K's sum of squares), computed where the fold
  // writes its result. By op: the fold whose epilogue computes it, or -1;
  // by fold: the epilogue's last op, whose tile the fold writes, or -1.
  std::vector<int> epilogue_of_, epilogue_end_;
  // Outputs per warp (g) of a fold that spreads each output's elements over
  // 32 / g lanes of a warp, each taking every (32 / g)-th, and adds their
  // parts by shuffles: a ring fold of few outputs (at most half as many as
  // threads) along an axis of 16 or more; 0 otherwise (a thread an output).
  int64_t FoldOutputsPerWarp(int x, int axis) const;
  // Lanes per vector column of a ring fold down a matrix's columns (its
  // rows summed, each column an output: QK-norm's sum of K's squares over
  // its head dim) that reads whole 16-byte ring vectors: each warp takes
  // row_vectors / warps vector columns, their lanes every P-th row, and
  // halving shuffles leave each lane one column's sum (EmitColumnFold); 0
  // where the shape does not allow it.
  int64_t ColumnFoldLanes(int x, int axis) const;
  void EmitColumnFold(int i, int target, const std::string& what);
  std::vector<bool> needed_;
  // By op: an elementwise op after the loop (or in a kernel without one)
  // that only an output reads, computed in the output's store pass: no
  // tile, no pass of its own (PlanStoredOps).
  std::vector<bool> computed_by_store_;
  void PlanStoredOps(const std::vector<int>& uses);
  FragmentEpilogue fragment_;  // tiled_plans.h
  void PlanFragmentEpilogue(const std::vector<int>& uses);
  bool FragmentOutput(int value) const { return !fragment_.products.empty() && fragment_.ops[value]; }
  // Op x's value at the lane's fragment element (j, h).
  std::string FragmentValue(int x) const;
  void EmitFragmentEpilogue();
  // An elementwise op's operands read by `reader`'s threads (barrier where
  // needed); whether one is broadcast (not the op's shape).
  bool ReadOperands(int i, Spread reader);
  // Element `coords` (linear index l) of elementwise op i.
  std::string ElementwiseValue(int i, const std::vector<std::string>& coords, const std::string& linear = "l");
  bool step_wrote_ = false;      // a loop step wrote shared memory
  int64_t syncs_ = 0;            // barriers emitted so far
  size_t synced_at_ = 0;         // where the code was at the last one's end
  int64_t step_barriers_ = 0;    // of them, in a loop step
  int64_t direct_scratch_ = -1;  // offset of the flushes' partial sums in `scratch`
  // The scratch the flushes after the loop use (direct_scratch_).
  std::string FlushScratch() const { return absl::StrCat("(scratch + ", direct_scratch_, ")"); }
  int64_t registers_ = 40;
  void PlanMatmul(int i);
  std::vector<MatmulPlan> matmuls_;  // by tile op (kMatmul ops only)
  std::vector<RowProductPlan> row_products_;  // by tile op (kRowMatmul ops only)
  void PlanRowMatmul(int i);  // with the layout (its scratch); `ahead` after the split share's plan
  void EmitRowMatmul(int i);
  void EmitRowProductsAhead(const std::string& split);  // RowProductPlan::ahead, before the meeting
  // Into array `raw`: the thread's vectors of row product i's matrix at `row` (tile), in k's run `part` ("": all).
  void EmitRowMatrixLoads(int i, const std::string& row, const std::string& raw, const std::string& part);
  std::vector<int64_t> offsets_;     // of each tile's buffer in floats, or -1
  int64_t buffers_ = 0;              // floats of tile buffers
  int64_t scratch_ = 0;              // floats of split-K partial sums, after the buffers
  int64_t stages_ = 0;               // of the ring; 0: no ring
  int64_t ring_floats_ = 0;          // of the ring, after the scratch (each input's padded to 128 bytes)
  // Tiles read only before the loop, or computed after it, lie in the
  // ring's space (PlanLayout).
  bool ring_space_shared_ = false;
  // Of them, tiles read before the loop; tiles computed after it. Where the
  // former fit the ring's last stage (or are none), ring_first_: the ring's
  // first copies go out before them, and before the wait where
  // ring_before_wait_ (EmitWaitForPriorGrid).
  bool before_in_ring_space_ = false, after_in_ring_space_ = false, ring_first_ = false, ring_before_wait_ = false;
  // The loop step whose tiles are being loaded (the next one, when
  // prefetching): its first coordinate and in-range length.
  std::string loop_start_ = "k0", loop_length_ = "kn";
  // Inside OpenThreadTasks: the thread's first task (l at it = 0), unsigned.
  std::string thread_task_;
};

}  // namespace kiln::codegen::tiled_internal

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_GENERATOR_H_
