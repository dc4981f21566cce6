#include "optimizer/lower.h"

#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/partition.h"
#include "optimizer/ugraph_json.h"
#include "tensor/check.h"

namespace kiln::lowering {
namespace {

using ugraph::BlockGraph;
using ugraph::BlockKind;
using ugraph::InputIterator;
using ugraph::ScalarOp;
using ugraph::ThreadGraph;
using ugraph::View;
using ugraph::ViewStep;
using Chain = std::vector<ViewStep>;

// Products of at least this many rows (of f16/bf16) take the pipelined
// tensor-core kernel; fewer rows fill too little of its 64- or 128-row tiles.
constexpr int64_t kPipelinedRows = 128;
// Blocks that fill an H100 (132 SMs) once: a product with fewer than this
// many of its widest tiles takes narrower ones.
constexpr int64_t kFullGrid = 128;

// Elements per block of a pointwise kernel (256 threads). Over a large
// space each thread takes 4 per pass of its grid-stride loop; over a small
// one (a decode step's vectors) one, so no thread waits on a chain of
// dependent loads while the GPU's other SMs idle.
int64_t PointwiseTile(const Shape& space) {
  constexpr int64_t kThreads = 256;
  const bool small = space.is_concrete() && space.num_elements() < kThreads * 4 * kFullGrid;
  return small ? kThreads : kThreads * 4;
}

// Threads of a row kernel's block. Many rows fill the GPU with 256 each; a
// few long rows (a decode step's RMSNorm, its softmax over the cache) take up
// to 1024, so each thread's loops, whose loads wait on one another, run
// fewer times.
int64_t RowThreads(const Shape& kept, const Shape& reduced) {
  constexpr int64_t kManyRows = kFullGrid;
  if (!kept.is_concrete() || kept.num_elements() >= kManyRows) return 256;
  int64_t threads = 256;
  while (threads < 1024 && (!reduced.is_concrete() || threads < reduced.num_elements())) threads *= 2;
  return threads;
}

// How many threads of a warp-dot product share one output column's K. Long
// columns take 4 warps (2 columns a block): on the H100, against a warp per
// column, bf16 weights [N, K] streamed at 580 vs 338 GB/s (512 x 2048), 1340
// vs 1180 (2048 x 2048), 2140 vs 1710 (2048 x 8192), and as fast at the
// classifier's 128256 x 2048 (3030). A short column (attention's scores over
// a 64-wide head) takes only the lanes that one pass of 16-byte loads keeps
// busy, so the block's other lanes take other columns instead of idling.
int64_t WarpDotThreadsPerColumn(const Dim& k, DType b_dtype) {
  constexpr int64_t kLongColumn = 128;
  if (!k.is_concrete()) return kLongColumn;
  const int64_t per_load = DTypeSize(b_dtype) == 4 ? 4 : 8;
  const int64_t loads = (k.value() + per_load - 1) / per_load;
  int64_t threads = 1;
  while (threads < loads && threads < kLongColumn) threads *= 2;
  return threads;
}

// A fusion the code generator cannot express: `node` must get a buffer.
struct FusionError {
  const Node* node;
};

ViewStep StepOf(const Node* view) {
  ViewStep step;
  step.shape = view->shape;
  switch (view->op) {
    case OpKind::kPermute: {
      step.kind = ViewStep::Kind::kPermute;
      const auto& perm = std::get<PermuteAttrs>(view->attrs).perm;
      step.perm.assign(perm.begin(), perm.end());
      break;
    }
    case OpKind::kSlice: {
      step.kind = ViewStep::Kind::kSlice;
      const auto& ranges = std::get<SliceAttrs>(view->attrs).ranges;
      step.ranges.assign(ranges.begin(), ranges.end());
      break;
    }
    case OpKind::kExpand:
      step.kind = ViewStep::Kind::kExpand;
      break;
    default:
      step.kind = ViewStep::Kind::kReshape;
      break;
  }
  return step;
}

Chain Prepend(ViewStep step, const Chain& chain) {
  Chain out;
  out.reserve(chain.size() + 1);
  out.push_back(std::move(step));
  out.insert(out.end(), chain.begin(), chain.end());
  return out;
}

// Broadcasting `from` to `to` (NumPy rules), as a chain.
Chain Broadcast(const Shape& from, const Shape& to, const Chain& chain) {
  if (from == to) return chain;
  ViewStep step;
  step.kind = ViewStep::Kind::kExpand;
  step.shape = to;
  return Prepend(std::move(step), chain);
}

std::string ChainKey(const Chain& chain) {
  ugraph::View v;
  v.steps = chain;
  ugraph::KernelGraph g;  // reuse the JSON writer's canonical form of steps
  std::string key;
  for (const ViewStep& s : chain) {
    absl::StrAppend(&key, static_cast<int>(s.kind), ":", s.shape.ToString(), ":");
    for (int p : s.perm) absl::StrAppend(&key, p, ",");
    for (const auto& r : s.ranges) absl::StrAppend(&key, r.start.ToString(), "/", r.step, ",");
    absl::StrAppend(&key, ";");
  }
  return key;
}

// Whether a chain only broadcasts (keeps every non-unit dim in order): the
// shape of reading a per-row value at element coordinates.
bool OnlyBroadcasts(const Chain& chain) {
  for (const ViewStep& s : chain) {
    if (s.kind == ViewStep::Kind::kExpand) continue;
    if (s.kind != ViewStep::Kind::kReshape) return false;
  }
  return true;
}

class Lowering {
 public:
  Lowering(const Trace& trace, const Partition& partition, const LowerOptions& options, LoweredTrace& out)
      : trace_(trace), partition_(partition), options_(options), out_(out) {}

  void Run() {
    // Buffers the caller receives, directly or as a view: never widened.
    for (const Node* o : trace_.outputs()) {
      const Node* base = o;
      while (!base->is_realized() && IsView(base->op) && !partition_.materialized.contains(base)) {
        base = base->inputs[0].get();
      }
      returned_.insert(base);
    }
    for (size_t g = 0; g < partition_.groups.size(); ++g) LowerGroup(static_cast<int>(g));
    for (const Node* o : trace_.outputs()) {
      LoweredTrace::Output binding;
      const Node* base = o;
      if (!partition_.materialized.contains(o) && !o->is_realized()) {
        while (IsView(base->op) && !partition_.materialized.contains(base)) {
          binding.views.insert(binding.views.begin(), base);
          base = base->inputs[0].get();
          if (base->is_realized()) break;
        }
      }
      binding.tensor = TensorOf(base);
      out_.outputs.push_back(std::move(binding));
    }
  }

 private:
  // The DTensor holding a leaf's or a materialized node's value.
  int TensorOf(const Node* n) {
    auto it = tensor_of_.find(n);
    if (it != tensor_of_.end()) return it->second;
    ugraph::DTensor t;
    t.id = static_cast<int>(out_.graph.tensors.size());
    t.dtype = n->dtype;
    if (n->is_realized()) {
      t.role = ugraph::TensorRole::kInput;
      t.shape = Shape::FromExtents(n->data.sizes);
      t.strides.assign(n->data.strides.begin(), n->data.strides.end());
    } else {
      t.shape = n->shape;
      const bool is_output = returned_.contains(n);
      t.role = is_output ? ugraph::TensorRole::kOutput : ugraph::TensorRole::kIntermediate;
      // 16-bit floats no one outside the run sees stay in f32, as on the CPU.
      if (!is_output && (t.dtype == DType::kF16 || t.dtype == DType::kBF16)) t.dtype = DType::kF32;
    }
    out_.graph.tensors.push_back(t);
    out_.tensor_nodes.push_back(n);
    tensor_of_[n] = t.id;
    return t.id;
  }

  bool HasBuffer(const Node* n) const {
    return n->is_realized() || partition_.materialized.contains(n);
  }

  // ---- per kernel

  void LowerGroup(int g) {
    const Group& group = partition_.groups[g];
    group_ = g;
    block_ = BlockGraph();
    kernel_inputs_.clear();
    iterators_.clear();
    memo_.clear();
    block_.iteration_shape = group.space;
    std::vector<int> outputs;
    switch (group.kind) {
      case GroupKind::kPointwise:
        LowerPointwise(group, &outputs);
        break;
      case GroupKind::kRowReduce:
        LowerRow(group, &outputs);
        break;
      case GroupKind::kMatmul:
        LowerMatmul(group, &outputs);
        break;
      case GroupKind::kInPlaceUpdate:
        LowerInPlace(group, &outputs);
        break;
      case GroupKind::kFused:
        LowerFused(group, &outputs);
        break;
    }
    ugraph::Kernel kernel;
    kernel.block = std::move(block_);
    kernel.inputs.assign(kernel_inputs_.begin(), kernel_inputs_.end());
    kernel.outputs = std::move(outputs);
    out_.graph.kernels.push_back(std::move(kernel));
  }

  // Members of the group that leave it, in trace order.
  std::vector<const Node*> Saved(const Group& group) const {
    std::vector<const Node*> saved;
    for (const Node* m : group.members) {
      if (partition_.materialized.contains(m)) saved.push_back(m);
    }
    return saved;
  }

  void LowerPointwise(const Group& group, std::vector<int>* outputs) {
    block_.kind = BlockKind::kPointwise;
    block_.threads = 256;
    block_.grid[0] = {group.space, PointwiseTile(group.space)};
    graph_ = &block_.epilogue;
    for (const Node* m : Saved(group)) {
      const int value = Emit(m, {});
      AddOutput(m, value, false, outputs);
    }
  }

  // The searched kernels, their tensors renamed to this graph's: the
  // region's inputs and output, and buffers of their own for what one of
  // them passes to the next (a factored region's, search/factor.h). All but
  // the last go straight into the graph; the last is the group's kernel.
  void LowerFused(const Group& group, std::vector<int>* outputs) {
    const FusedRegion* fused = nullptr;
    for (const FusedRegion& f : options_.fused) {
      if (f.root == group.anchor) fused = &f;
    }
    KILN_CHECK(fused != nullptr && !fused->graph.kernels.empty(), "lowering: a fused group without its kernel");
    // An input read through views (a slice of the KV cache) is its buffer
    // with those views in front of each of the kernel's own.
    std::vector<int> rename;
    std::vector<Chain> through;
    for (const Node* in : fused->inputs) {
      Chain chain;
      const Node* base = BufferUnder(in, &chain);
      KILN_CHECK(HasBuffer(base), "lowering: a searched kernel reads a value without a buffer");
      rename.push_back(TensorOf(base));
      through.push_back(std::move(chain));
    }
    rename.push_back(TensorOf(group.anchor));
    through.resize(fused->graph.tensors.size());
    for (size_t t = rename.size(); t < fused->graph.tensors.size(); ++t) {
      ugraph::DTensor between = fused->graph.tensors[t];
      between.id = static_cast<int>(out_.graph.tensors.size());
      between.role = ugraph::TensorRole::kIntermediate;
      out_.graph.tensors.push_back(between);
      out_.tensor_nodes.push_back(nullptr);
      rename.push_back(between.id);
    }
    for (size_t k = 0; k < fused->graph.kernels.size(); ++k) {
      const ugraph::Kernel& kernel = fused->graph.kernels[k];
      block_ = kernel.block;
      for (ugraph::InputIterator& it : block_.inputs) {
        const int input = it.view.tensor;
        it.view.tensor = rename[input];
        if (through[input].empty()) continue;
        it.view.source_shape = out_.graph.tensors[it.view.tensor].shape;
        it.view.steps.insert(it.view.steps.begin(), through[input].begin(), through[input].end());
      }
      for (ugraph::OutputSaver& o : block_.outputs) o.tensor = rename[o.tensor];
      if (k + 1 == fused->graph.kernels.size()) {
        for (int t : kernel.inputs) kernel_inputs_.insert(rename[t]);
        for (int t : kernel.outputs) outputs->push_back(rename[t]);
        break;
      }
      ugraph::Kernel before;
      before.block = std::move(block_);
      for (int t : kernel.inputs) before.inputs.push_back(rename[t]);
      for (int t : kernel.outputs) before.outputs.push_back(rename[t]);
      out_.graph.kernels.push_back(std::move(before));
    }
  }

  // Each update of the group (its values share one shape) writes its
  // value into its destination's buffer.
  void LowerInPlace(const Group& group, std::vector<int>* outputs) {
    block_.kind = BlockKind::kPointwise;
    block_.threads = 256;
    block_.grid[0] = {group.space, PointwiseTile(group.space)};
    graph_ = &block_.epilogue;
    for (const Node* n : group.members) {
      if (n->op != OpKind::kSliceUpdate || !options_.in_place_updates.contains(n)) continue;
      const auto& attrs = std::get<SliceUpdateAttrs>(n->attrs);
      const int value = Emit(n->inputs[1].get(), {});
      const int dst = TensorOf(ThroughViews(n->inputs[0].get()));
      const int id = TensorOf(n);
      out_.graph.tensors[id].aliases = dst;
      kernel_inputs_.insert(dst);
      ugraph::OutputSaver saver;
      saver.tensor = id;
      saver.value = value;
      saver.omap = {0, -1, -1};
      saver.shift_axis = attrs.axis;
      saver.shift = attrs.start;
      block_.outputs.push_back(saver);
      outputs->push_back(id);
    }
  }

  void LowerRow(const Group& group, std::vector<int>* outputs) {
    block_.kind = BlockKind::kRowReduce;
    block_.reduced_axes = group.reduced_axes;
    Shape kept, row_shape = group.space;
    for (int a = 0; a < group.space.rank(); ++a) {
      if (std::find(group.reduced_axes.begin(), group.reduced_axes.end(), a) ==
          group.reduced_axes.end()) {
        kept.push_back(group.space[a]);
      } else {
        row_shape[a] = Dim(1);
      }
    }
    block_.threads = RowThreads(kept, ReducedShape(group));
    block_.grid[0] = {kept, 1};
    block_.forloop = {ReducedShape(group), block_.threads};
    // Accumulators in trace order; each reduction's phase follows the phases
    // of the accumulators its input reads. A last phase computes the outputs.
    std::vector<const Node*> reductions;
    for (const Node* m : group.members) {
      if (IsReduce(m->op)) reductions.push_back(m);
    }
    phase_of_.clear();
    accumulator_of_.clear();
    int phases = 0;
    for (const Node* r : reductions) {
      const int p = PhaseAfter(r->inputs[0].get());
      phase_of_[r] = p;
      phases = std::max(phases, p + 1);
    }
    block_.phases.resize(phases + 1);
    for (int p = 0; p < phases; ++p) {
      graph_ = &block_.phases[p].graph;
      memo_.clear();
      current_phase_ = p;
      for (const Node* r : reductions) {
        if (phase_of_[r] != p) continue;
        ugraph::Accumulator acc;
        acc.kind = r->op == OpKind::kReduceMax ? ugraph::AccumulatorKind::kMax
                                               : ugraph::AccumulatorKind::kSum;
        acc.mean = r->op == OpKind::kReduceMean;
        acc.dtype = r->dtype;
        acc.value = Emit(r->inputs[0].get(), {});
        accumulator_of_[r] =
            AccumulatorIndex(p) + static_cast<int>(block_.phases[p].accumulators.size());
        block_.phases[p].accumulators.push_back(acc);
      }
    }
    graph_ = &block_.phases.back().graph;
    memo_.clear();
    current_phase_ = phases;
    for (const Node* m : Saved(group)) {
      // Reductions and keepdim-shaped values are one per row.
      const bool per_row = IsReduce(m->op) || (m->shape == row_shape && !(row_shape == group.space));
      const Chain chain = per_row ? Broadcast(row_shape, group.space, {}) : Chain{};
      const int value = IsReduce(m->op) ? Emit(m, {}) : Emit(m, chain);
      AddOutput(m, value, per_row, outputs);
    }
  }

  static Shape ReducedShape(const Group& group) {
    Shape s;
    for (int a : group.reduced_axes) s.push_back(group.space[a]);
    return s;
  }

  int AccumulatorIndex(int phase) const {
    int index = 0;
    for (int p = 0; p < phase; ++p) index += static_cast<int>(block_.phases[p].accumulators.size());
    return index;
  }

  // The first phase in which `n` can be evaluated: after every reduction of
  // this group it depends on.
  int PhaseAfter(const Node* n) {
    int phase = 0;
    std::vector<const Node*> stack = {n};
    absl::flat_hash_set<const Node*> seen;
    while (!stack.empty()) {
      const Node* m = stack.back();
      stack.pop_back();
      if (!seen.insert(m).second || m->is_realized()) continue;
      auto g = partition_.group_of.find(m);
      const bool member = g != partition_.group_of.end() && g->second == group_;
      if (member && IsReduce(m->op)) {
        phase = std::max(phase, phase_of_.at(m) + 1);
        continue;
      }
      if (HasBuffer(m) && !member) continue;
      for (const auto& in : m->inputs) stack.push_back(in.get());
    }
    return phase;
  }

  void LowerMatmul(const Group& group, std::vector<int>* outputs) {
    const Node* mm = group.anchor;
    block_.kind = BlockKind::kMatmul;
    const Shape& out = mm->shape;
    const int r = out.rank();
    Shape batch(out.dims().subspan(0, r - 2));
    const Dim& m = out[r - 2];
    const Dim& n = out[r - 1];
    const Node* a = mm->inputs[0].get();
    const Node* b = mm->inputs[1].get();
    const Dim& k = a->shape[a->shape.rank() - 1];
    Shape a_shape = batch, b_shape = batch;
    a_shape.push_back(m);
    a_shape.push_back(k);
    b_shape.push_back(k);
    b_shape.push_back(n);
    const bool half = mm->dtype == DType::kF16 || mm->dtype == DType::kBF16;
    using ugraph::MatmulAlgorithm;
    if (m.is_concrete() && m.value() <= 4) {
      // Decode: too few rows for tiles; threads stream B's columns.
      block_.threads = 256;
      const int64_t per_column = WarpDotThreadsPerColumn(k, b->dtype);
      block_.tiles = {m.value(), block_.threads / per_column, 1, MatmulAlgorithm::kWarpDot, mm->dtype};
    } else if (half && options_.pipelined_products && m.is_concrete() && m.value() >= kPipelinedRows &&
               !partition_.decoded_in_loads.contains(ThroughViews(b))) {
      // Prefill: the pipelined kernel, on 128 x 128 tiles where they make
      // enough blocks to fill the GPU, on narrower tiles otherwise.
      int64_t tile_m = 128, tile_n = n.is_concrete() && n.value() <= 64 ? 64 : 128;
      const int64_t batches = batch.is_concrete() ? batch.num_elements() : kFullGrid;
      const auto blocks = [&](int64_t tm, int64_t tn) {
        const int64_t columns = n.is_concrete() ? (n.value() + tn - 1) / tn : kFullGrid;
        return (m.value() + tm - 1) / tm * columns * batches;
      };
      if (blocks(tile_m, tile_n) < kFullGrid) tile_m = 64;
      if (blocks(tile_m, tile_n) < kFullGrid) tile_n = 64;
      block_.tiles = {tile_m, tile_n, 32, MatmulAlgorithm::kTensorCore, mm->dtype};
      block_.threads = 256;
    } else if (half) {
      block_.tiles = {64, 64, 32, MatmulAlgorithm::kTensorCore, mm->dtype};
      // Small M: narrower tiles give the grid enough blocks.
      if (m.is_concrete() && m.value() <= 16) block_.tiles.m = 16;
      block_.threads = 128;
    } else {
      block_.tiles = {64, 64, 16, MatmulAlgorithm::kSimt, mm->dtype};
      if (m.is_concrete() && m.value() <= 16) block_.tiles.m = 16;
      block_.threads = 256;
    }
    const int ia = Iterator(a, Broadcast(a->shape, a_shape, {}));
    const int ib = Iterator(b, Broadcast(b->shape, b_shape, {}));
    KILN_CHECK(ia == 0 && ib == 1, "matmul operands must be the first two inputs");
    // Decoded blocks: a product that cannot decode them in its loads gets
    // them dequantized to a buffer instead.
    if (block_.inputs[ib].quant && !ugraph::DecodesQuantizedB(block_)) throw FusionError{ThroughViews(b)};
    const ugraph::View& b_view = block_.inputs[ib].view;
    const bool along_k = block_.inputs[ib].quant ? ugraph::ReadsRowsAlongK(b_view)
                                                 : codegen::ContiguousDim(out_.graph, b_view) == r - 2;
    if (block_.tiles.algorithm == MatmulAlgorithm::kWarpDot && block_.threads / block_.tiles.n >= 128 && along_k) {
      // Long columns, each read along K (a weight stored [N, K]): each
      // thread sums `decode_columns` of them, reading A once for all.
      const int64_t columns = std::max<int64_t>(1, options_.decode_columns);
      block_.tiles.n *= columns;
      block_.tiles.k = columns;
    }
    block_.inputs[0].imap = {-1, r - 2, r > 2 ? 0 : -1};
    block_.inputs[0].fmap = r - 1;
    block_.inputs[1].imap = {r - 1, -1, r > 2 ? 0 : -1};
    block_.inputs[1].fmap = r - 2;
    block_.grid[0] = {Shape{n}, block_.tiles.n};
    block_.grid[1] = {Shape{m}, block_.tiles.m};
    block_.grid[2] = {batch, 1};
    const bool warp_dot = block_.tiles.algorithm == MatmulAlgorithm::kWarpDot;
    block_.forloop = {Shape{k}, warp_dot ? 1 : block_.tiles.k};
    graph_ = &block_.epilogue;
    for (const Node* s : Saved(group)) AddOutput(s, Emit(s, {}), false, outputs);
  }

  void AddOutput(const Node* n, int value, bool per_row, std::vector<int>* outputs) {
    const int id = TensorOf(n);
    ugraph::OutputSaver saver;
    saver.tensor = id;
    saver.value = value;
    saver.per_row = per_row;
    saver.omap = block_.kind == BlockKind::kMatmul ? std::array<int, 3>{1, 0, 2}
                                                   : std::array<int, 3>{0, -1, -1};
    block_.outputs.push_back(saver);
    outputs->push_back(id);
  }

  // ---- thread graphs

  int Add(ScalarOp op) {
    graph_->ops.push_back(std::move(op));
    return static_cast<int>(graph_->ops.size()) - 1;
  }

  int AddIterator(View view, std::optional<ugraph::QuantRead> quant = std::nullopt) {
    const std::string key =
        absl::StrCat(view.tensor, "|", view.source_shape.ToString(), "|", ChainKey(view.steps),
                     quant ? absl::StrCat("|", QuantName(quant->format), DTypeName(quant->dtype)) : "");
    auto it = iterators_.find(key);
    if (it != iterators_.end()) return it->second;
    if (view.tensor >= 0) kernel_inputs_.insert(view.tensor);
    InputIterator in;
    in.view = std::move(view);
    in.quant = quant;
    block_.inputs.push_back(std::move(in));
    const int index = static_cast<int>(block_.inputs.size()) - 1;
    iterators_[key] = index;
    return index;
  }

  // The node whose buffer `n` reads through views (or the first node
  // without one under them), with those views put in front of `steps`.
  const Node* BufferUnder(const Node* n, Chain* steps) const {
    while (!HasBuffer(n) && IsView(n->op)) {
      *steps = Prepend(StepOf(n), *steps);
      n = n->inputs[0].get();
    }
    return n;
  }

  // An iterator reading the buffer under `n` (through its views), then `chain`.
  int Iterator(const Node* n, const Chain& chain) {
    Chain steps = chain;
    const Node* base = BufferUnder(n, &steps);
    if (!HasBuffer(base) && partition_.decoded_in_loads.contains(base)) return DecodedIterator(base, std::move(steps));
    if (!HasBuffer(base)) throw FusionError{base};
    View view;
    view.tensor = TensorOf(base);
    view.source_shape = out_.graph.tensors[view.tensor].shape;
    view.shape = steps.empty() ? view.source_shape : steps.back().shape;
    view.steps = std::move(steps);
    return AddIterator(std::move(view));
  }

  // An iterator decoding the packed blocks under dequantize node `d` (see
  // ugraph::QuantRead), then reading them through `steps`.
  int DecodedIterator(const Node* d, Chain steps) {
    const Node* packed = d->inputs[0].get();
    KILN_CHECK(HasBuffer(packed), "lowering: dequantized blocks without a buffer");
    View view;
    view.tensor = TensorOf(packed);
    view.source_shape = d->shape;
    view.shape = steps.empty() ? d->shape : steps.back().shape;
    view.steps = std::move(steps);
    return AddIterator(std::move(view), ugraph::QuantRead{std::get<QuantAttrs>(d->attrs).format, d->dtype});
  }

  // Coordinates of a shape seen from the iteration space through `chain`.
  int Coordinates(const Shape& shape, const Chain& chain) {
    View view;
    view.tensor = -1;
    view.source_shape = shape;
    view.shape = chain.empty() ? shape : chain.back().shape;
    view.steps = chain;
    return AddIterator(std::move(view));
  }

  bool Member(const Node* n) const {
    auto it = partition_.group_of.find(n);
    return it != partition_.group_of.end() && it->second == group_;
  }

  int Emit(const Node* n, const Chain& chain) {
    const std::string key = absl::StrCat(reinterpret_cast<uintptr_t>(n), "#", ChainKey(chain));
    auto memo = memo_.find(key);
    if (memo != memo_.end()) return memo->second;
    const int value = EmitUncached(n, chain);
    memo_[key] = value;
    return value;
  }

  int EmitUncached(const Node* n, const Chain& chain) {
    if (n->is_realized() || (HasBuffer(n) && !Member(n))) {
      ScalarOp load;
      load.kind = ScalarOp::Kind::kLoad;
      load.dtype = n->dtype;
      load.input = Iterator(n, chain);
      return Add(load);
    }
    if (IsView(n->op)) return Emit(n->inputs[0].get(), Prepend(StepOf(n), chain));
    ScalarOp op;
    op.dtype = n->dtype;
    switch (n->op) {
      case OpKind::kConstant:
        op.kind = ScalarOp::Kind::kConstant;
        op.value = std::get<ConstantAttrs>(n->attrs).value;
        return Add(op);
      case OpKind::kIota:
        op.kind = ScalarOp::Kind::kIota;
        op.iota = std::get<IotaAttrs>(n->attrs);
        op.input = Coordinates(n->shape, chain);
        return Add(op);
      case OpKind::kRandom:
        op.kind = ScalarOp::Kind::kRandom;
        op.random = std::get<RandomAttrs>(n->attrs);
        op.input = Coordinates(n->shape, chain);
        return Add(op);
      case OpKind::kContiguous:
        return Emit(n->inputs[0].get(), chain);
      case OpKind::kCast:
        op.kind = ScalarOp::Kind::kCast;
        op.args = {Emit(n->inputs[0].get(), chain)};
        return Add(op);
      case OpKind::kWhere:
        op.kind = ScalarOp::Kind::kWhere;
        for (const auto& in : n->inputs) op.args.push_back(Emit(in.get(), Broadcast(in->shape, n->shape, chain)));
        return Add(op);
      case OpKind::kIndexSelect:
        return EmitGather(n, chain);
      case OpKind::kDequantize:
        op.kind = ScalarOp::Kind::kDequant;
        op.quant = std::get<QuantAttrs>(n->attrs).format;
        op.input = Iterator(n->inputs[0].get(), {});
        op.inputs = {Coordinates(n->shape, chain)};
        return Add(op);
      case OpKind::kConcat:
      case OpKind::kSliceUpdate:
        return EmitSelect(n, chain);
      case OpKind::kMatmul:
        if (Member(n) && chain.empty()) {
          op.kind = ScalarOp::Kind::kAccumulator;
          op.input = 0;
          return Add(op);
        }
        throw FusionError{n};
      default:
        break;
    }
    if (IsReduce(n->op)) {
      if (Member(n) && OnlyBroadcasts(chain) && accumulator_of_.contains(n) &&
          phase_of_.at(n) < current_phase_) {
        op.kind = ScalarOp::Kind::kAccumulator;
        op.input = accumulator_of_.at(n);
        return Add(op);
      }
      throw FusionError{n};
    }
    if (IsUnary(n->op) || IsBinary(n->op)) {
      op.kind = IsUnary(n->op) ? ScalarOp::Kind::kUnary : ScalarOp::Kind::kBinary;
      op.op = n->op;
      for (const auto& in : n->inputs) op.args.push_back(Emit(in.get(), Broadcast(in->shape, n->shape, chain)));
      return Add(op);
    }
    throw FusionError{n};
  }

  int EmitGather(const Node* n, const Chain& chain) {
    const Node* x = n->inputs[0].get();
    const Node* index = n->inputs[1].get();
    const int axis = std::get<AxisAttrs>(n->attrs).axis;
    const int q = index->shape.rank();
    // The index read at the index dims of n's coordinates.
    Shape placed;
    for (int i = 0; i < axis; ++i) placed.push_back(Dim(1));
    for (const Dim& d : index->shape) placed.push_back(d);
    for (int i = axis + 1; i < x->shape.rank(); ++i) placed.push_back(Dim(1));
    ViewStep to_placed;
    to_placed.kind = ViewStep::Kind::kReshape;
    to_placed.shape = placed;
    const Chain index_chain = Prepend(to_placed, Broadcast(placed, n->shape, chain));
    ScalarOp op;
    op.kind = ScalarOp::Kind::kGather;
    op.dtype = n->dtype;
    op.axis = axis;
    op.index_rank = q;
    op.args = {Emit(index, index_chain)};
    op.input = Iterator(x, {});
    op.inputs = {Coordinates(n->shape, chain)};
    return Add(op);
  }

  int EmitSelect(const Node* n, const Chain& chain) {
    ScalarOp op;
    op.kind = ScalarOp::Kind::kSelect;
    op.dtype = n->dtype;
    op.inputs = {Coordinates(n->shape, chain)};
    if (n->op == OpKind::kConcat) {
      op.axis = std::get<AxisAttrs>(n->attrs).axis;
      Dim at(0);
      for (const auto& piece : n->inputs) {
        op.inputs.push_back(Iterator(piece.get(), {}));
        const Dim end = at + piece->shape[op.axis];
        op.bounds.push_back(at);
        op.bounds.push_back(end);
        at = end;
      }
    } else {
      const auto& attrs = std::get<SliceUpdateAttrs>(n->attrs);
      op.axis = attrs.axis;
      const Node* dst = n->inputs[0].get();
      const Node* src = n->inputs[1].get();
      op.inputs.push_back(Iterator(src, {}));
      op.bounds.push_back(attrs.start);
      op.bounds.push_back(attrs.start + src->shape[op.axis]);
      op.inputs.push_back(Iterator(dst, {}));
      op.bounds.push_back(Dim(0));
      op.bounds.push_back(dst->shape[op.axis]);
    }
    return Add(op);
  }

  const Trace& trace_;
  const Partition& partition_;
  const LowerOptions& options_;
  LoweredTrace& out_;
  absl::flat_hash_map<const Node*, int> tensor_of_;
  absl::flat_hash_set<const Node*> returned_;
  // Per kernel being built:
  int group_ = 0;
  BlockGraph block_;
  ThreadGraph* graph_ = nullptr;
  std::set<int> kernel_inputs_;
  std::map<std::string, int> iterators_;
  std::map<std::string, int> memo_;
  absl::flat_hash_map<const Node*, int> phase_of_;
  absl::flat_hash_map<const Node*, int> accumulator_of_;
  int current_phase_ = 0;
};

}  // namespace

absl::StatusOr<LoweredTrace> LowerTrace(const Trace& trace, const LowerOptions& options) {
  PartitionOptions partition_options;
  partition_options.in_place_updates = options.in_place_updates;
  for (const FusedRegion& f : options.fused) {
    partition_options.fused[f.root] = f.inputs;
    for (const Node* n : f.interior) {
      if (n != f.root) partition_options.fused_interior.insert(n);
    }
  }
  const size_t limit = trace.nodes().size() + 1;
  for (size_t attempt = 0; attempt <= limit; ++attempt) {
    const Partition partition = PartitionTrace(trace, partition_options);
    LoweredTrace out;
    try {
      Lowering(trace, partition, options, out).Run();
      return out;
    } catch (const FusionError& e) {
      if (!partition_options.force_materialize.insert(e.node).second) {
        return absl::InternalError(absl::StrCat("lowering: cannot place ", OpName(e.node->op), " ",
                                                e.node->shape.ToString(), " even with a buffer"));
      }
    }
  }
  return absl::InternalError("lowering: did not converge");
}

}  // namespace kiln::lowering
