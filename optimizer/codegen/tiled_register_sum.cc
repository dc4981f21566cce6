// Sums of graph-defined blocks over an elementwise chain of a ring tile,
// computed from the ring (see PlanRegisterSums and PlanRingFolds in
// tiled_generator.h): RMSNorm's sum of squares, fused into its
// accumulator, is computed by each thread over the ring vectors it copied
// itself, so the loop step writes no tile for it and takes no barrier;
// QK-norm's sum of K's squares at each step folds the ring's elements.
#include <algorithm>

#include "optimizer/codegen/thread_emitter.h"
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

namespace {
constexpr int kNoSource = -2;  // a chain of constants only
}  // namespace

int TiledGenerator::ChainSource(int x) const {
  const TileOp& op = b_.tile_ops[x];
  switch (op.kind) {
    case TileOp::Kind::kInput: return inputs_[x].ring ? x : -1;
    case TileOp::Kind::kConstant: return kNoSource;
    case TileOp::Kind::kUnary:
    case TileOp::Kind::kBinary: {
      int source = kNoSource;
      for (int a : op.args) {
        const int s = ChainSource(a);
        if (s == -1 || (s >= 0 && source >= 0 && s != source)) return -1;
        if (s >= 0) source = s;
      }
      // Elementwise over the ring tile itself: no broadcast.
      return source >= 0 && !SameShape(x, source) ? -1 : source;
    }
    default: return -1;
  }
}

std::string TiledGenerator::ChainValue(int x, const std::string& value, int leaf) const {
  const TileOp& op = b_.tile_ops[x];
  if (x == leaf || op.kind == TileOp::Kind::kInput) return value;
  if (op.kind == TileOp::Kind::kConstant) return Literal(op.value, DType::kF32);
  std::string out = absl::StrCat(OpFunction(op.op), "(", ChainValue(op.args[0], value, leaf));
  if (op.kind == TileOp::Kind::kBinary) absl::StrAppend(&out, ", ", ChainValue(op.args[1], value, leaf));
  return out + ")";
}

void TiledGenerator::PlanRegisterSums() {
  register_sum_.assign(b_.tile_ops.size(), -1);
  register_root_.assign(b_.tile_ops.size(), -1);
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kReduceSum || fused_into_[i] < 0 || phase_[i] != Phase::kLoop ||
        b_.tile_ops[fused_into_[i]].rescale >= 0) {
      continue;  // (sums kept in registers for the whole loop cannot follow a running max)
    }
    const int source = ChainSource(op.args[0]);
    if (source < 0) continue;
    const InputPlan& in = inputs_[source];
    // Summed along the vectors' axis, the last of two, tasks row-major:
    // task l holds part of row l / (vectors a row).
    if (in.width == 1 || in.task_sizes.size() != 2 || in.order != std::vector<int>{0, 1} || op.axis != 1) continue;
    register_sum_[i] = source;
    registers_ += in.per_thread;
    // Constant factors at the chain's top leave the per-element work and
    // scale the flushed sum: sum(c * f(x)) = c * sum(f(x)). (Kept inside,
    // the factor cost rmsnorm_linear_bs1 5 us on an H100: 27.6 vs 22.3.)
    register_root_[i] = op.args[0];
    while (const std::optional<std::pair<int, double>> peeled = ConstantFactor(register_root_[i])) {
      register_root_[i] = peeled->first;
      fused_scale_[i] *= peeled->second;
    }
  }
}

void TiledGenerator::PlanRingFolds(const std::vector<int>& uses) {
  ring_chain_.assign(b_.tile_ops.size(), -1);
  epilogue_of_.assign(b_.tile_ops.size(), -1);
  epilogue_end_.assign(b_.tile_ops.size(), -1);
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kReduceSum || phase_[i] != Phase::kLoop || register_sum_[i] >= 0 ||
        fused_into_[i] >= 0) {
      continue;
    }
    const int x = op.args[0];
    const TileOp::Kind kind = b_.tile_ops[x].kind;
    if (kind != TileOp::Kind::kUnary && kind != TileOp::Kind::kBinary) continue;
    const int source = ChainSource(x);
    if (source < 0) continue;
    const InputPlan& in = inputs_[source];
    // RingElement's layout: a matrix, rows of vectors along its last
    // axis, row by row.
    const int rank = static_cast<int>(in.task_sizes.size());
    if (in.ring_of >= 0 || in.width == 1 || !IsMatrix(source) || in.vector_axis != rank - 1 ||
        in.order[rank - 1] != rank - 1 || in.order[rank - 2] != rank - 2) {
      continue;
    }
    // The chain's ops (x and what it reads up to the ring tile), each read
    // by the chain only: none of them is needed as a tile.
    std::vector<int> chain, stack = {x};
    while (!stack.empty()) {
      const int c = stack.back();
      stack.pop_back();
      const TileOp& cop = b_.tile_ops[c];
      if (cop.kind == TileOp::Kind::kInput || cop.kind == TileOp::Kind::kConstant) continue;
      if (std::find(chain.begin(), chain.end(), c) != chain.end()) continue;
      chain.push_back(c);
      for (int a : cop.args) stack.push_back(a);
    }
    bool shared = false;
    for (size_t r = 0; r < b_.tile_ops.size(); ++r) {
      if (r == i || std::find(chain.begin(), chain.end(), static_cast<int>(r)) != chain.end()) continue;
      for (int a : b_.tile_ops[r].args) shared = shared || std::find(chain.begin(), chain.end(), a) != chain.end();
    }
    for (const ugraph::OutputSaver& o : b_.outputs) {
      shared = shared || std::find(chain.begin(), chain.end(), o.value) != chain.end();
    }
    if (shared) continue;
    for (int c : chain) ring_chain_[c] = source;
    inputs_[source].cross_read = true;  // a fold reads other threads' copies
    // Its epilogue: while the result's only reader is elementwise on it
    // and constants, of its shape.
    int end = static_cast<int>(i);
    while (uses[end] == 1) {
      int reader = -1;  // (none: the one use is an output)
      for (size_t r = 0; r < b_.tile_ops.size(); ++r) {
        for (int a : b_.tile_ops[r].args) reader = a == end ? static_cast<int>(r) : reader;
      }
      if (reader < 0 || !SameShape(reader, static_cast<int>(i)) || phase_[reader] != Phase::kLoop) break;
      const TileOp& rop = b_.tile_ops[reader];
      if (rop.kind != TileOp::Kind::kUnary && rop.kind != TileOp::Kind::kBinary) break;
      bool constants = true;
      for (int a : rop.args) constants &= a == end || b_.tile_ops[a].kind == TileOp::Kind::kConstant;
      if (!constants) break;
      epilogue_of_[reader] = static_cast<int>(i);
      end = reader;
    }
    if (end != static_cast<int>(i)) epilogue_end_[i] = end;
  }
}

int64_t TiledGenerator::FoldOutputsPerWarp(int x, int axis) const {
  if (ring_chain_[x] < 0 || FoldsByWarp(x, axis)) return 0;
  const std::vector<int64_t> sizes = Sizes(tiles_[x]);
  const int64_t outputs = tiles_[x].elements() / sizes[axis];
  int64_t parts = 1;
  while (parts < 8 && outputs * parts * 2 <= b_.threads && sizes[axis] >= 8 * parts * 2) parts *= 2;
  return parts > 1 ? 32 / parts : 0;
}

void TiledGenerator::EmitRegisterSum(int i) {
  const TileOp& op = b_.tile_ops[i];
  const int source = register_sum_[i];
  const InputPlan& in = inputs_[source];
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", added to x", fused_into_[i],
           " after the loop: this thread's ring vectors, summed in registers");
  OpenThreadTasks(source);
  e_.Linef("const uint4 v = ", RingSlot(source, "stage", "l"), ";");
  e_.Linef("const int c = l % ", in.task_sizes[1], " * ", in.width, ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", in.width, "; ++j)"));
  e_.Linef("const float e = bits_to_", DTypeSuffix(in.dtype), "(vector_bits(v, j, ", DTypeSize(in.dtype), "));");
  // Only in-range elements: the chain of the zeros past the end need not be 0.
  e_.Linef("if (c + j < ", Length(tiles_[source].axes[1]), ") rs", i, "[it] += ", ChainValue(register_root_[i], "e"),
           ";");
  e_.Close();
  CloseThreadTasks(source);
}

void TiledGenerator::EmitRegisterSumFlush() {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const int source = register_sum_[i];
    if (source < 0) continue;
    const InputPlan& in = inputs_[source];
    const int target = fused_into_[i];
    const int64_t per_row = in.task_sizes[1];
    if (in.per_thread == 1 && per_row <= 32 && (per_row & (per_row - 1)) == 0) {
      // Each row's partial sums lie in per_row consecutive lanes of one
      // warp (task l on thread l): added by shuffles, no scratch, and only
      // the barrier its readers need.
      e_.Linef("// x", target, " += the threads' partial sums of x", i, ": each row's ", per_row,
               " added across their lanes by shuffles");
      Read(target, Spread::kOther);
      e_.Open("");
      e_.Linef("float sum = rs", i, "[0];");
      e_.Line("#pragma unroll");
      e_.Linef("for (int o = ", per_row / 2, "; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);");
      e_.Linef("if (threadIdx.x < ", in.tasks, " && threadIdx.x % ", per_row, " == 0) ", Buffer(target),
               "[threadIdx.x / ", per_row, "] += ", Scaled(static_cast<int>(i), "sum"), ";");
      e_.Close();
      Wrote(target, Spread::kOther);
      continue;
    }
    const std::string part = FlushScratch();
    e_.Linef("// x", target, " += the threads' partial sums of x", i, ", through the scratch in task order");
    Sync();  // the scratch may hold other sums
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int it = 0; it < ", in.per_thread, "; ++it)"));
    e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ";");
    e_.Linef(in.tasks % b_.threads != 0 ? absl::StrCat("if (l < ", in.tasks, ") ") : "", part, "[l] = rs", i,
             "[it];");
    e_.Close();
    Sync();
    OpenLinear(tiles_[i].elements());
    e_.Line("float sum = 0.0f;");
    e_.Linef("for (int v = 0; v < ", in.task_sizes[1], "; ++v) sum += ", part, "[l * ", in.task_sizes[1], " + v];");
    e_.Linef(Buffer(target), "[l] += ", Scaled(static_cast<int>(i), "sum"), ";");
    e_.Close();
    Wrote(target, Spread::kOther);
  }
}

}  // namespace kiln::codegen::tiled_internal
