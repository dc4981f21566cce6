// Planning of graph-defined blocks (BlockKind::kTiled): the ring's stages
// and the shared-memory layout of the tiles, scratch and ring (the code
// itself is emitted in tiled_gen.cc).
#include <algorithm>

#include "optimizer/codegen/tiled_generator.h"
#include "optimizer/ugraph_validate.h"

namespace kiln::codegen::tiled_internal {
namespace {

// Whether a kernel may copy `tensors` before its wait for the kernel before
// it (wait_for_prior_grid). So where that kernel is another of its graph's
// (not its first kernel; the executor launches it early only after another
// of the graph's: KernelSource::inputs_before_wait), which let it start
// only once its own wait was over (launch_dependents), everything before
// it done; and each tensor is a graph input that no output of the graph is
// written over (DTensor::aliases: a KV cache's slice update).
bool RingBeforeWait(const Emitter& e, const std::vector<int>& tensors) {
  if (e.kernel_index() <= 0) return false;
  for (const int t : tensors) {
    if (e.graph().tensors[t].role != ugraph::TensorRole::kInput) return false;
    for (const ugraph::DTensor& other : e.graph().tensors) {
      if (other.aliases == t) return false;
    }
  }
  return true;
}

// A block's steps up to which the ring's first copies go out before the
// tiles of the phase before the loop (Q) are loaded, after the wait: there
// the copies' round trip is much of the block's time. Over more steps, Q,
// which the first step's scores wait for, goes first. On an H200, in one
// call: gqa_bs1 and qknorm_gqa_bs1 (4 steps a block) 0.1 us faster so,
// qknorm_gqa_bs8 (16) 0.3 us and seed_attention (64) 0.1 us slower; with
// this rule against the ring first everywhere (two rounds, another call),
// qknorm_gqa_bs8 23.6 -> 23.2 us and seed_attention 35.7 -> 35.3.
constexpr int64_t kRingFirstSteps = 4;

}  // namespace

absl::Status TiledGenerator::Plan() {
  // The ring's stages: the most loop steps in flight per SM (stages - 1
  // per block, times the blocks an SM holds: no more than the grid gives
  // each SM), fewer stages on a tie (more blocks hide each other's
  // barriers). (gated_mlp_bs8's 64 blocks took 3 stages so that 2 blocks
  // could share an SM, which none did: 28.3 us on an H100, 26.8 with 4.)
  // A ring that leaves the tiles too
  // little shared memory is dropped. The ring may take more than its usual
  // 96 KiB where a step's tiles are large, for 2 or 3 steps in flight (a
  // single query's K and V tiles, 48 KiB a step, got only 2 stages there:
  // one step in flight, no more than prefetching through registers).
  // A streaming loop (StreamsAhead) whose grid gives each SM one block
  // may take a fifth stage where two such blocks still fit an SM: room for
  // the next kernel's blocks, which start beside its last steps
  // (EmitWaitForPriorGrid). On the H100, back to back: rmsnorm_linear_bs8's
  // kernel 18.7 -> 18.0 us, bs1's 18.1 -> 17.4; gated_mlp_bs8's, which
  // with 5 stages of 34 KiB fits one block an SM, 22.9 -> 25.3.
  int64_t best = 0, best_bytes = 0, best_score = 0;
  bool grouped = false;  // a layout tried had groups of flash warps
  const int64_t grid_per_sm = (ugraph::LaunchedBlocks(b_) + ugraph::kPlannedSms - 1) / ugraph::kPlannedSms;
  for (const int64_t ring_bytes : {kLargeRingBytes, kRingBytes}) {
    for (int64_t max_stages = kStreamingStages; max_stages >= (ring_bytes == kRingBytes ? 2 : 3); --max_stages) {
      const absl::Status layout = PlanLayout(max_stages, ring_bytes);
      grouped |= flash_.groups > 1;
      if (!layout.ok() || stages_ < max_stages) continue;
      const int64_t per_sm = BlocksPerSm(b_.threads, shared_bytes(), registers_);
      if (stages_ > 4 && (grid_per_sm > 1 || !StreamsAhead() || per_sm < 2)) continue;
      const int64_t score = (stages_ - 1) * std::min(grid_per_sm, per_sm);
      if (score >= best_score) {
        best = max_stages;
        best_bytes = ring_bytes;
        best_score = score;
      }
    }
  }
  // Groups of flash warps whose merge scratch left no ring that fits: the
  // warps past the slabs idle instead.
  if (best == 0 && grouped && flash_groups_allowed_) {
    flash_groups_allowed_ = false;
    return Plan();
  }
  if (absl::Status s = PlanLayout(best, best_bytes); !s.ok()) return s;
  PlanSplitShare();
  // A row product's matrix for a share of one row a block (or its run of
  // k, in a cluster), loaded before the blocks meet where its vectors fit
  // in 32 registers a thread.
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    RowProductPlan& plan = row_products_[i];
    if (b_.tile_ops[i].kind != TileOp::Kind::kRowMatmul || !needed_[i]) continue;
    if (share_.cluster) {
      plan.parts = share_.parts;
      plan.run /= plan.parts;
      plan.per_thread = (plan.run + plan.groups - 1) / plan.groups;
    }
    plan.ahead = share_.axis >= 0 && share_.per == 1 && (share_.parts == 1 || share_.cluster) &&
                 ShareAxisOf(tiles_[b_.tile_ops[i].args[0]]) == 0 && plan.vectors * plan.groups <= b_.threads &&
                 plan.per_thread * (plan.width > 1 ? 4 : 1) <= 32;
  }
  return absl::OkStatus();
}

int TiledGenerator::InPlaceArgument(int i) const {
  const TileOp& op = b_.tile_ops[i];
  if ((op.kind != TileOp::Kind::kUnary && op.kind != TileOp::Kind::kBinary) || epilogue_of_[i] >= 0) return -1;
  for (const int a : op.args) {
    const TileOp::Kind kind = b_.tile_ops[a].kind;
    if (kind == TileOp::Kind::kConstant || Sizes(tiles_[a]) != Sizes(tiles_[i])) continue;
    if (tiles_[a].padded_floats() != tiles_[i].padded_floats()) continue;
    int readers = 0;
    for (const TileOp& other : b_.tile_ops) {
      readers += static_cast<int>(std::count(other.args.begin(), other.args.end(), a)) + (other.rescale == a);
    }
    for (const ugraph::OutputSaver& o : b_.outputs) readers += o.value == a;
    if (readers == 1) return a;
  }
  return -1;
}

std::vector<bool> TiledGenerator::BeforeLoopOnly() const {
  const size_t n = b_.tile_ops.size();
  std::vector<bool> only(n, false);
  for (size_t i = 0; i < n; ++i) only[i] = phase_[i] == Phase::kBefore;
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    for (size_t k = 0; k < op.args.size(); ++k) {
      // The flash scores' A taken into registers (or packed) before the loop (DeclareFlash).
      const bool in_registers =
          k == 0 && ((static_cast<int>(i) == flash_.scores && (flash_.a_registers || flash_.a_shared)) ||
                     matmuls_[i].a_packed >= 0);
      only[op.args[k]] = only[op.args[k]] && (phase_[i] == Phase::kBefore || in_registers);
    }
    if (op.rescale >= 0) only[op.rescale] = false;
  }
  for (const ugraph::OutputSaver& o : b_.outputs) only[o.value] = false;
  return only;
}

absl::Status TiledGenerator::PlanLayout(int64_t max_stages, int64_t ring_bytes) {
  const size_t n = b_.tile_ops.size();
  buffers_ = scratch_ = stages_ = ring_floats_ = 0;
  ring_space_shared_ = before_in_ring_space_ = after_in_ring_space_ = ring_first_ = ring_before_wait_ = false;
  direct_scratch_ = -1;
  for (size_t i = 0; i < b_.inputs.size(); ++i) {
    if (b_.inputs[i].view.tensor < 0) {
      return absl::UnimplementedError(absl::StrCat("codegen: tiled input #", i, " is a virtual source"));
    }
  }
  std::vector<int> tensors;
  for (const ugraph::InputIterator& it : b_.inputs) tensors.push_back(it.view.tensor);
  for (const ugraph::OutputSaver& o : b_.outputs) tensors.push_back(o.tensor);
  for (int t : tensors) {
    const DType dtype = e_.graph().tensors[t].dtype;
    if (!IsFloatStorage(dtype)) {
      return absl::UnimplementedError(
          absl::StrCat("codegen: tiled kernels read and write f32, f16 or bf16; t", t, " is ", DTypeName(dtype)));
    }
  }
  std::vector<int> uses(n, 0);
  phase_.assign(n, Phase::kBefore);
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    for (int a : op.args) ++uses[a];
    // An accumulator is zeroed before the loop and updated at each step.
    const bool accumulates = op.kind == TileOp::Kind::kAccumulate;
    phase_[i] = tiles_[i].in_loop || accumulates ? Phase::kLoop
                : tiles_[i].after_loop           ? Phase::kAfter
                                                 : Phase::kBefore;
  }
  for (const ugraph::OutputSaver& o : b_.outputs) ++uses[o.value];
  // An input that only ops after the loop read (MLA's W_uv, for the
  // product with the attention's output) is loaded after it: its tile
  // then lies in the ring's space, and in a split loop only the last block
  // loads it. Loaded before the loop, its element-by-element loads held up
  // every block's start (MLA: 2.1 us of 34 on an H100).
  std::vector<bool> read_after(n, false), read_elsewhere(n, false);
  for (size_t i = 0; i < n; ++i) {
    for (int a : b_.tile_ops[i].args) (phase_[i] == Phase::kAfter ? read_after : read_elsewhere)[a] = true;
    if (b_.tile_ops[i].rescale >= 0) read_elsewhere[b_.tile_ops[i].rescale] = true;
  }
  for (const ugraph::OutputSaver& o : b_.outputs) read_elsewhere[o.value] = true;
  const bool loop = b_.forloop.extent.rank() > 0;
  for (size_t i = 0; i < n; ++i) {
    if (loop && b_.tile_ops[i].kind == TileOp::Kind::kInput && phase_[i] == Phase::kBefore && read_after[i] &&
        !read_elsewhere[i]) {
      phase_[i] = Phase::kAfter;
    }
  }
  // Registers for staged loads: the loop's stay live across a step's work;
  // the ones before and after it are free again once their tiles are in.
  int64_t loop_registers = 48, before_registers = 64, after_registers = 64;
  // Matrices only row products read are read where they are used.
  inputs_.assign(n, InputPlan{});
  std::vector<bool> row_matrices(n, false), read_otherwise(n, false);
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    for (size_t k = 0; k < op.args.size(); ++k) {
      (op.kind == TileOp::Kind::kRowMatmul && k == 1 ? row_matrices : read_otherwise)[op.args[k]] = true;
    }
  }
  for (const ugraph::OutputSaver& o : b_.outputs) read_otherwise[o.value] = true;
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kInput) continue;
    if (row_matrices[i] && !read_otherwise[i]) {
      inputs_[i].at_use = true;
      inputs_[i].tile = false;
      continue;
    }
    PlanInput(static_cast<int>(i), tiles_[i].in_loop           ? &loop_registers
                                   : phase_[i] == Phase::kAfter ? &after_registers
                                                                : &before_registers);
  }
  if (max_stages >= 2) PlanRing(max_stages, ring_bytes, &loop_registers);
  registers_ = 40 + (48 - loop_registers);
  // A matmul or sum whose only use is an accumulator adds its result to
  // the accumulator directly: no tile of its own, no extra pass (and for a
  // sum, no barrier between it and the accumulator). So does a sum scaled
  // by a constant on its way there (c * sum, as the search writes a mean):
  // the scale is applied where the sum is added.
  fused_into_.assign(n, -1);
  fused_from_.assign(n, -1);
  fused_scale_.assign(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kAccumulate) continue;
    int a = op.args[0];
    double scale = 1.0;
    if (const std::optional<std::pair<int, double>> scaled = ScaledSum(a); scaled && uses[a] == 1) {
      a = scaled->first;
      scale = scaled->second;
    }
    const TileOp::Kind kind = b_.tile_ops[a].kind;
    if ((kind == TileOp::Kind::kMatmul || kind == TileOp::Kind::kReduceSum) && uses[a] == 1 &&
        SameShape(a, static_cast<int>(i))) {
      fused_into_[a] = static_cast<int>(i);
      fused_from_[i] = a;
      fused_scale_[a] = scale;
    }
  }
  PlanRegisterSums();
  PlanRingFolds(uses);
  matmuls_.assign(n, MatmulPlan{});
  PlanDirect(uses);
  PlanStepMma(uses);
  PlanFlash(uses);
  PlanPackedA();
  for (size_t i = 0; i < n; ++i) {
    if (matmuls_[i].direct && matmuls_[i].per_warp > 16 && static_cast<int>(i) != flash_.pv) {
      return absl::UnimplementedError(
          absl::StrCat("codegen: x", i, " takes two slabs of rows a warp, which only the flash path runs"));
    }
  }
  ShareRings();
  PlanFlushScratch();
  PlanNeeded();
  DropFlashTiles();
  if (const QFromBits q = FlashQFromBits(); q.q >= 0) {
    inputs_[q.q].tile = false;  // no f32 tile
    for (int x : q.chain) needed_[x] = false;  // computed in registers
  }
  PlanStoredOps(uses);
  PlanFragmentEpilogue(uses);
  // A buffer per tile but constants (literals), products and sums added
  // straight into their accumulator, tiles read only from registers or the
  // ring, and ops nothing needs; each 16-byte aligned for vector reads.
  offsets_.assign(n, -1);
  // Tiles that only ops before the loop read (MLA's W_uk^T, once its
  // product with q is taken) lie in the ring's space: the ring fills after
  // them (EmitBlockBody's barrier before its prologue).
  // So do tiles computed after the loop (attention's output, O / l): the
  // ring is done with then (EmitBlockBody's barrier after the loop).
  const std::vector<bool> before_only = BeforeLoopOnly();
  const int doubled = FoldAhead();  // a tile in two halves, by step parity
  std::vector<int> in_ring_space, after_in_ring_space;
  for (size_t i = 0; i < n; ++i) {
    const bool input = b_.tile_ops[i].kind == TileOp::Kind::kInput;
    const bool untiled = input ? inputs_[i].direct || !inputs_[i].tile : !needed_[i] || computed_by_store_[i];
    if (b_.tile_ops[i].kind == TileOp::Kind::kConstant || fused_into_[i] >= 0 || untiled) continue;
    if (stages_ > 0 && before_only[i]) {
      in_ring_space.push_back(static_cast<int>(i));
      continue;
    }
    if (stages_ > 0 && (phase_[i] == Phase::kAfter || FlashAccumulator(static_cast<int>(i)))) {
      after_in_ring_space.push_back(static_cast<int>(i));
      continue;
    }
    offsets_[i] = buffers_;
    buffers_ += tiles_[i].padded_floats() * (static_cast<int>(i) == doubled ? 2 : 1);
  }
  flash_.a_offset = FlashSharedAFloats() > 0 ? buffers_ : -1;
  buffers_ += FlashSharedAFloats();
  for (size_t i = 0; i < n; ++i) {
    if (matmuls_[i].a_packed < 0) continue;
    matmuls_[i].a_packed = buffers_;
    buffers_ += PackedAFloats(static_cast<int>(i));
  }
  PlanShifts();
  const int64_t limit = ugraph::DeviceLimits().max_shared_memory_per_block;
  if (4 * buffers_ > limit) {
    return absl::UnimplementedError(absl::StrCat("codegen: the tiles need ", 4 * buffers_,
                                                 " bytes of shared memory; a block has ", limit));
  }
  row_products_.assign(n, RowProductPlan{});
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind == TileOp::Kind::kMatmul && !matmuls_[i].mma && !matmuls_[i].direct) {
      PlanMatmul(static_cast<int>(i));
    }
    if (b_.tile_ops[i].kind == TileOp::Kind::kRowMatmul && needed_[i]) PlanRowMatmul(static_cast<int>(i));
  }
  // The ring's stages after the scratch, each input's 128-byte aligned:
  // a ring 16 bytes off that cost rmsnorm_linear_bs1 5 us on an H100
  // (27.7 vs 22.3 us, the kernels otherwise the same).
  // Rings that wgmma reads start on its swizzle's 1024-byte period.
  if (stages_ > 0) {
    const int64_t line = flash_.wgmma ? 256 : 32;  // floats
    auto aligned = [line](int64_t floats) { return (floats + line - 1) / line * line; };
    const int64_t start = aligned(buffers_ + scratch_);
    int64_t at = start;
    for (size_t i = 0; i < n; ++i) {
      if (!inputs_[i].ring || inputs_[i].ring_of >= 0) continue;
      inputs_[i].ring_offset = at;
      at = aligned(at + stages_ * inputs_[i].tasks * 4);
    }
    // The tiles read before the loop from `at`; where they end.
    const auto place_before = [&](int64_t at) {
      for (int i : in_ring_space) offsets_[i] = -1;
      for (int i : in_ring_space) {
        const int same = InPlaceArgument(i);
        if (same >= 0 && std::find(in_ring_space.begin(), in_ring_space.end(), same) != in_ring_space.end() &&
            offsets_[same] >= 0) {
          offsets_[i] = offsets_[same];
          continue;
        }
        offsets_[i] = at;
        at += tiles_[i].padded_floats();
      }
      return at;
    };
    // In a ring's last stage where they fit: the ring's prologue fills the
    // stages before it (RingAhead), so its copies may go out before those
    // tiles are loaded, and the loop's first copies into that stage follow
    // a barrier (EmitRingStep, or EmitBlockBody's before the loop). So
    // where the copies go out before the wait (RingBeforeWait), or a
    // block's steps are few (kRingFirstSteps).
    std::vector<int> ring_tensors;
    for (const int i : RingOwners()) ring_tensors.push_back(b_.inputs[b_.tile_ops[i].input].view.tensor);
    const bool before_wait = RingBeforeWait(e_, ring_tensors);
    const int64_t share = BlockSteps();
    const bool wanted = before_wait || (share > 0 && share <= kRingFirstSteps);
    int64_t before = place_before(start), after = start;
    ring_first_ = wanted && in_ring_space.empty();
    for (const int i : RingOwners()) {
      const int64_t stage = inputs_[i].tasks * 4;
      if (!wanted || ring_first_ || before - start > stage) continue;
      before = place_before(inputs_[i].ring_offset + (stages_ - 1) * stage);
      ring_first_ = true;
    }
    ring_before_wait_ = ring_first_ && before_wait;
    for (int i : after_in_ring_space) {
      offsets_[i] = after;
      after += tiles_[i].padded_floats();
    }
    ring_floats_ = std::max({at, before, after}) - (buffers_ + scratch_);
    ring_space_shared_ = !in_ring_space.empty() || !after_in_ring_space.empty();
    before_in_ring_space_ = !in_ring_space.empty();
    after_in_ring_space_ = !after_in_ring_space.empty();
  }
  if (shared_bytes() > limit) {
    return absl::UnimplementedError(absl::StrCat("codegen: the tiles, scratch and loads in flight need ",
                                                 shared_bytes(), " bytes of shared memory; a block has ", limit));
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen::tiled_internal
