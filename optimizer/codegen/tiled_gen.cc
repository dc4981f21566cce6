// Code for graph-defined blocks (BlockKind::kTiled).
//
// Tiles are f32 buffers in dynamic shared memory, row-major over the tile
// axes, 16-byte aligned (SharedMemoryBytes' layout, less constants and
// products summed straight into accumulators, plus scratch for matmuls
// whose threads split the contraction). A thread
// block walks grid points (grid-stride loops: the launch caps y and z); per
// grid point it runs
//   before the loop  the tiles that need neither a loop step nor an
//                    accumulator (inputs read whole, constants), and zeroes
//                    the accumulators;
//   the loop         the tiles of each step, then the accumulator updates;
//   after the loop   the tiles that read accumulators, then the stores.
// Tile elements outside their tensor (the tail of a grid or loop tile) load
// as 0 and never reach an in-range result: matmuls contract and reductions
// sum only the in-range part of an axis, and stores skip the rest, so ops on
// the tails may compute anything (exp(0), rsqrt(0)).
#include "optimizer/codegen/tiled_gen.h"

#include <algorithm>
#include <map>

#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/codegen/thread_emitter.h"
#include "optimizer/tile_analysis.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/check.h"

namespace kiln::codegen {
namespace {

using ugraph::BlockGraph;
using ugraph::TileAxis;
using ugraph::TileInfo;
using ugraph::TileOp;
using Source = TileAxis::Source;

bool IsFloatStorage(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

std::vector<int64_t> Sizes(const TileInfo& t) {
  std::vector<int64_t> sizes;
  for (const TileAxis& a : t.axes) sizes.push_back(a.size);
  return sizes;
}

std::vector<int> RowMajorOrder(size_t rank) {
  std::vector<int> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = static_cast<int>(d);
  return order;
}

int64_t Product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

// Row-major index of `coords` (int expressions) in a tile of `sizes`.
std::string RowMajor(const std::vector<int64_t>& sizes, const std::vector<std::string>& coords) {
  std::string out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    const int64_t stride = Product(sizes, d + 1, sizes.size());
    const std::string term = stride == 1 ? coords[d] : absl::StrCat(coords[d], " * ", stride);
    absl::StrAppend(&out, out.empty() ? "" : " + ", term);
  }
  return out.empty() ? "0" : out;
}

class TiledGenerator {
 public:
  TiledGenerator(Emitter& e, const BlockGraph& b, std::vector<TileInfo> tiles)
      : e_(e), b_(b), tiles_(std::move(tiles)) {}

  absl::Status Generate();
  // Dynamic shared memory the kernel takes, in bytes.
  int64_t shared_bytes() const { return 4 * (buffers_ + scratch_); }

 private:
  enum class Phase { kBefore, kLoop, kAfter };

  absl::Status Plan();
  void EmitOp(int i);
  // The ops of one phase, its input tiles first: their loads go out
  // together and one barrier covers them all.
  void EmitPhase(Phase phase);
  // Issues the staged loop tiles' loads for the first step (before the
  // loop) or the next one (inside it).
  void EmitPrefetch(bool first);

  // Input tiles. A staged input issues its loads into registers (raw bits)
  // and converts them into its buffer later, so that a thread has all its
  // loads in flight at once and the next loop step's loads overlap this
  // step's work; a direct one (too many loads per thread to hold) loads and
  // converts element by element.
  void PlanInput(int i, int64_t* registers);
  std::vector<std::string> TaskCoords(int i, const std::string& task);
  void EmitIssue(int i, const std::string& task, const std::string& raw);
  void EmitConvert(int i, const std::string& task, const std::string& raw);
  // The staged loads' issue (into raw registers) or their conversion.
  void EmitStaged(int i, bool issue);
  void DeclareRaw(int i);
  void EmitDirect(int i);
  void EmitElementwise(int i);
  void EmitMatmul(int i);
  void EmitReduce(int i);
  void EmitAccumulate(int i);
  void EmitStores();

  // Synchronization: a buffer written since the last __syncthreads is
  // "dirty"; reading it is safe without a barrier only for the thread that
  // wrote the element, i.e. when both sides spread the tile linearly
  // (element l on thread l % threads) and index it alike.
  void Read(int buffer, bool same_element);
  void Wrote(int buffer, bool linear);
  void Sync();
  // Elements of an axis that can be in range (the tile size, or less where
  // the tensor is known to be smaller): what work is spread over.
  static int64_t Useful(const TileAxis& a);

  // Opens the linear loop over a tile's elements: `for (int l = ...)`.
  void OpenLinear(int64_t elements);
  // Splits `linear` over `sizes`, the axes in `order` (fastest last); emits
  // one int per axis of size above 1 (the others are "0").
  std::vector<std::string> Unravel(const std::vector<int64_t>& sizes, const std::vector<int>& order,
                                   const std::string& linear);
  // The element of tile op `a` at element `l` (coordinates `coords`) of a
  // tile shaped `out`: broadcast over size-1 and missing leading axes.
  std::string Operand(int a, const TileInfo& out, const std::vector<std::string>& coords);
  bool SameShape(int a, int b) const { return Sizes(tiles_[a]) == Sizes(tiles_[b]); }

  // The first tensor coordinate a tile axis covers at this block and step,
  // and how many of its elements are in range (i64 expressions).
  std::string Start(const TileAxis& a) const;
  std::string Length(const TileAxis& a) const;
  std::string Global(const TileAxis& a, const std::string& coord) const;
  // "c0 < n1 && ..." over the axes that can have tails; empty when none.
  std::string InRange(const TileInfo& t, const std::vector<std::string>& coords, int skip = -1) const;

  std::string Buffer(int i) const { return absl::StrCat("x", i); }
  std::string Raw(int i) const { return absl::StrCat("raw", i); }

  // How an input tile is read: `tasks` loads of `width` elements (16 bytes
  // along the last axis, or 1), unravelled over `task_sizes` in `order`
  // (the axis adjacent in memory last, so neighbouring threads coalesce).
  struct InputPlan {
    DType dtype = DType::kF32;
    int64_t width = 1;
    std::vector<int64_t> task_sizes;
    std::vector<int> order;
    int64_t tasks = 0, per_thread = 0;
    bool staged = false;
  };

  Emitter& e_;
  const BlockGraph& b_;
  std::vector<TileInfo> tiles_;
  std::vector<Phase> phase_;
  std::vector<int> fused_into_;  // a matmul summed straight into this accumulator, or -1
  std::vector<bool> fused_;      // an accumulator a matmul updates itself
  std::map<int, bool> dirty_;    // buffer -> written linearly
  std::vector<InputPlan> inputs_;  // by tile op (kInput ops only)

  // How a matmul's outputs spread over the threads: a task is `per` rows of
  // one column; when there are fewer tasks than threads, `split` threads
  // share a task, each summing every split-th k, and a second pass adds
  // their partial sums (in slice order: deterministic) from `scratch`.
  struct MatmulPlan {
    int64_t rows = 0, cols = 0, depth = 0, batches = 1;  // tile sizes
    int64_t per = 1, groups = 1, tasks = 0, split = 1;
    int64_t scratch = 0;  // offset of its partial sums in `scratch`
  };
  void PlanMatmul(int i);
  std::vector<MatmulPlan> matmuls_;  // by tile op (kMatmul ops only)
  std::vector<int64_t> offsets_;     // of each tile's buffer in floats, or -1
  int64_t buffers_ = 0;              // floats of tile buffers
  int64_t scratch_ = 0;              // floats of split-K partial sums, after the buffers
  // The loop step whose tiles are being loaded (the next one, when
  // prefetching): its first coordinate and in-range length.
  std::string loop_start_ = "k0", loop_length_ = "kn";
};

absl::Status TiledGenerator::Plan() {
  const size_t n = b_.tile_ops.size();
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
  // Registers for staged loads: the loop's stay live across a step's work.
  int64_t loop_registers = 48, other_registers = 64;
  inputs_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kInput) continue;
    PlanInput(static_cast<int>(i), tiles_[i].in_loop ? &loop_registers : &other_registers);
  }
  // A matmul whose only use is an accumulator adds its product to the
  // accumulator directly: no product tile, no extra pass.
  fused_into_.assign(n, -1);
  fused_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kAccumulate) continue;
    const int a = op.args[0];
    if (b_.tile_ops[a].kind == TileOp::Kind::kMatmul && uses[a] == 1) {
      fused_into_[a] = static_cast<int>(i);
      fused_[i] = true;
    }
  }
  // A buffer per tile but constants (literals) and products summed straight
  // into their accumulator, each 16-byte aligned for vector reads.
  offsets_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind == TileOp::Kind::kConstant || fused_into_[i] >= 0) continue;
    offsets_[i] = buffers_;
    buffers_ += (tiles_[i].elements() + 3) / 4 * 4;
  }
  const int64_t limit = ugraph::DeviceLimits().max_shared_memory_per_block;
  if (4 * buffers_ > limit) {
    return absl::UnimplementedError(absl::StrCat("codegen: the tiles need ", 4 * buffers_,
                                                 " bytes of shared memory; a block has ", limit));
  }
  matmuls_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind == TileOp::Kind::kMatmul) PlanMatmul(static_cast<int>(i));
  }
  return absl::OkStatus();
}

void TiledGenerator::Read(int buffer, bool same_element) {
  auto it = dirty_.find(buffer);
  if (it == dirty_.end() || (same_element && it->second)) return;
  Sync();
}

void TiledGenerator::Wrote(int buffer, bool linear) { dirty_[buffer] = linear; }

void TiledGenerator::Sync() {
  e_.Line("__syncthreads();");
  dirty_.clear();
}

int64_t TiledGenerator::Useful(const TileAxis& a) {
  const bool tail = a.source == Source::kGrid || a.source == Source::kLoop;
  return tail && a.extent.is_concrete() ? std::min(a.size, a.extent.value()) : a.size;
}

void TiledGenerator::OpenLinear(int64_t elements) {
  e_.Open(absl::StrCat("for (int l = threadIdx.x; l < ", elements, "; l += ", b_.threads, ")"));
}

std::vector<std::string> TiledGenerator::Unravel(const std::vector<int64_t>& sizes,
                                                 const std::vector<int>& order,
                                                 const std::string& linear) {
  std::vector<std::string> coords(sizes.size(), "0");
  int64_t stride = 1;
  for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
    const int d = order[k];
    if (sizes[d] == 1) continue;
    const bool outermost = Product(sizes, 0, sizes.size()) == stride * sizes[d];
    std::string value = stride == 1 ? linear : absl::StrCat(linear, " / ", stride);
    if (!outermost) value = absl::StrCat(stride == 1 ? value : "(" + value + ")", " % ", sizes[d]);
    coords[d] = e_.Fresh("i");
    e_.Linef("const int ", coords[d], " = ", value, ";");
    stride *= sizes[d];
  }
  return coords;
}

std::string TiledGenerator::Operand(int a, const TileInfo& out, const std::vector<std::string>& coords) {
  const TileOp& op = b_.tile_ops[a];
  if (op.kind == TileOp::Kind::kConstant) return Literal(op.value, DType::kF32);
  const std::vector<int64_t> sizes = Sizes(tiles_[a]);
  if (sizes == Sizes(out)) return absl::StrCat(Buffer(a), "[l]");
  // Operand axis d lines up with output axis d + lead.
  const size_t lead = out.axes.size() - sizes.size();
  std::vector<std::string> at(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) at[d] = coords[d + lead];
  return absl::StrCat(Buffer(a), "[", RowMajor(sizes, at), "]");
}

std::string TiledGenerator::Start(const TileAxis& a) const {
  switch (a.source) {
    case Source::kGrid: return absl::StrCat("s", a.grid_axis);
    case Source::kLoop: return loop_start_;
    case Source::kFull:
    case Source::kOne: return "0LL";
  }
  KILN_UNREACHABLE("unknown tile axis source");
}

std::string TiledGenerator::Length(const TileAxis& a) const {
  switch (a.source) {
    case Source::kGrid: return absl::StrCat("n", a.grid_axis);
    case Source::kLoop: return loop_length_;
    case Source::kFull:
    case Source::kOne: return absl::StrCat(a.size, "LL");
  }
  KILN_UNREACHABLE("unknown tile axis source");
}

std::string TiledGenerator::Global(const TileAxis& a, const std::string& coord) const {
  if (a.source == Source::kOne) return "0LL";
  if (a.source == Source::kFull) return coord;
  return absl::StrCat("(", Start(a), " + ", coord, ")");
}

std::string TiledGenerator::InRange(const TileInfo& t, const std::vector<std::string>& coords,
                                    int skip) const {
  std::string out;
  for (size_t d = 0; d < t.axes.size(); ++d) {
    const Source s = t.axes[d].source;
    if (static_cast<int>(d) == skip || (s != Source::kGrid && s != Source::kLoop)) continue;
    absl::StrAppend(&out, out.empty() ? "" : " && ", coords[d], " < ", Length(t.axes[d]));
  }
  return out;
}

void TiledGenerator::PlanInput(int i, int64_t* registers) {
  const TileInfo& t = tiles_[i];
  const ugraph::View& view = b_.inputs[b_.tile_ops[i].input].view;
  InputPlan& plan = inputs_[i];
  plan.dtype = e_.graph().tensors[view.tensor].dtype;
  plan.task_sizes = Sizes(t);
  const int rank = static_cast<int>(plan.task_sizes.size());
  const int contiguous = ContiguousDim(e_.graph(), view);
  const int fast = contiguous >= 0 && plan.task_sizes[contiguous] > 1 ? contiguous : rank - 1;
  for (int d = 0; d < rank; ++d) {
    if (d != fast) plan.order.push_back(d);
  }
  if (fast >= 0) plan.order.push_back(fast);
  // 16-byte vectors along the last axis when it is surely unit-stride: the
  // view only permutes and slices (reshapes and expands can break runs).
  bool plain_view = true;
  for (const ugraph::ViewStep& s : view.steps) {
    plain_view = plain_view && (s.kind == ugraph::ViewStep::Kind::kPermute ||
                                s.kind == ugraph::ViewStep::Kind::kSlice);
  }
  const int64_t width = 16 / static_cast<int64_t>(DTypeSize(plan.dtype));
  if (plain_view && rank > 0 && contiguous == rank - 1 && plan.task_sizes[rank - 1] % width == 0) {
    plan.width = width;
    plan.task_sizes[rank - 1] /= width;
  }
  plan.tasks = t.elements() / plan.width;
  plan.per_thread = (plan.tasks + b_.threads - 1) / b_.threads;
  const int64_t cost = plan.per_thread * (plan.width > 1 ? 4 : 1);
  plan.staged = cost <= *registers;
  if (plan.staged) *registers -= cost;
}

std::vector<std::string> TiledGenerator::TaskCoords(int i, const std::string& task) {
  const InputPlan& plan = inputs_[i];
  std::vector<std::string> coords = Unravel(plan.task_sizes, plan.order, task);
  if (plan.width > 1) {
    const std::string last = e_.Fresh("i");
    e_.Linef("const int ", last, " = ", coords.back(), " * ", plan.width, ";");
    coords.back() = last;
  }
  return coords;
}

void TiledGenerator::EmitIssue(int i, const std::string& task, const std::string& raw) {
  const InputPlan& plan = inputs_[i];
  const TileInfo& t = tiles_[i];
  const ugraph::View& view = b_.inputs[b_.tile_ops[i].input].view;
  const std::string ptr = absl::StrCat("p.t[", e_.Slot(view.tensor), "]");
  const std::string load = absl::StrCat("load_bits_", DTypeSuffix(plan.dtype));
  const size_t bytes = DTypeSize(plan.dtype);
  const std::vector<std::string> coords = TaskCoords(i, task);
  const auto offset = [&](const std::vector<std::string>& c) {
    std::vector<std::string> g(c.size());
    for (size_t d = 0; d < c.size(); ++d) g[d] = Global(t.axes[d], c[d]);
    return e_.Offset(view, g);  // plain arithmetic: fine out of range too
  };
  const std::string off = e_.Fresh("off");
  e_.Linef("const i64 ", off, " = ", offset(coords), ";");
  if (plan.width == 1) {
    const std::string in_range = InRange(t, coords);
    e_.Linef(raw, " = ", in_range.empty() ? "" : absl::StrCat(in_range, " ? "), load, "(", ptr, ", ", off,
             ")", in_range.empty() ? "" : " : 0u", ";");
    return;
  }
  // The whole vector in range and aligned: one load; else element by element.
  const int rank = static_cast<int>(coords.size());
  std::string whole = InRange(t, coords, rank - 1);
  const TileAxis& last = t.axes[rank - 1];
  if (last.source == Source::kGrid || last.source == Source::kLoop) {
    absl::StrAppend(&whole, whole.empty() ? "" : " && ", coords.back(), " + ", plan.width, " <= ",
                    Length(last));
  }
  e_.Linef(raw, " = make_uint4(0u, 0u, 0u, 0u);");
  e_.Open(absl::StrCat("if (", whole.empty() ? "" : whole + " && ", "aligned16(", ptr, ", ", off, ", ", bytes,
                       "))"));
  e_.Linef(raw, " = load16_bits(", ptr, ", ", off, ", ", bytes, ");");
  e_.Close();
  e_.Open("else");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.width, "; ++j)"));
  std::vector<std::string> element = coords;
  element.back() = absl::StrCat("(", coords.back(), " + j)");
  const std::string element_off = e_.Fresh("off");
  e_.Linef("const i64 ", element_off, " = ", offset(element), ";");
  const std::string in_range = InRange(t, element);
  e_.Linef(in_range.empty() ? "" : absl::StrCat("if (", in_range, ") "), "set_vector_bits(", raw, ", j, ", load,
           "(", ptr, ", ", element_off, "), ", bytes, ");");
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitConvert(int i, const std::string& task, const std::string& raw) {
  const InputPlan& plan = inputs_[i];
  const std::vector<std::string> coords = TaskCoords(i, task);
  const std::string at = RowMajor(Sizes(tiles_[i]), coords);
  const std::string widen = absl::StrCat("bits_to_", DTypeSuffix(plan.dtype));
  if (plan.width == 1) {
    e_.Linef(Buffer(i), "[", at, "] = ", widen, "(", raw, ");");
    return;
  }
  e_.Line("#pragma unroll");
  e_.Linef("for (int j = 0; j < ", plan.width, "; ++j) ", Buffer(i), "[", at, " + j] = ", widen,
           "(vector_bits(", raw, ", j, ", DTypeSize(plan.dtype), "));");
}

void TiledGenerator::EmitStaged(int i, bool issue) {
  const InputPlan& plan = inputs_[i];
  if (issue) {
    e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), ": issue ", plan.per_thread, " load(s) of ",
             plan.width, " ", DTypeName(plan.dtype), " per thread");
  } else {
    Read(i, false);
    e_.Linef("// x", i, ": widen the loaded bits into the tile");
  }
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", plan.per_thread, "; ++it)"));
  e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ";");
  const bool ragged = plan.tasks % b_.threads != 0;
  if (ragged) e_.Open(absl::StrCat("if (l < ", plan.tasks, ")"));
  const std::string raw = absl::StrCat(Raw(i), "[it]");
  issue ? EmitIssue(i, "l", raw) : EmitConvert(i, "l", raw);
  if (ragged) e_.Close();
  e_.Close();
  if (!issue) Wrote(i, false);
}

void TiledGenerator::DeclareRaw(int i) {
  e_.Linef(inputs_[i].width > 1 ? "uint4 " : "unsigned ", Raw(i), "[", inputs_[i].per_thread, "];");
}

void TiledGenerator::EmitDirect(int i) {
  const InputPlan& plan = inputs_[i];
  Read(i, false);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), ": ", plan.width, " ", DTypeName(plan.dtype),
           " per load");
  OpenLinear(plan.tasks);
  e_.Linef(plan.width > 1 ? "uint4" : "unsigned", " raw;");
  EmitIssue(i, "l", "raw");
  EmitConvert(i, "l", "raw");
  e_.Close();
  Wrote(i, false);
}

void TiledGenerator::EmitElementwise(int i) {
  const TileOp& op = b_.tile_ops[i];
  const TileInfo& t = tiles_[i];
  bool broadcast = false;
  for (int a : op.args) {
    const bool same = SameShape(a, i);
    if (b_.tile_ops[a].kind != TileOp::Kind::kConstant) Read(a, same);
    broadcast = broadcast || (!same && b_.tile_ops[a].kind != TileOp::Kind::kConstant);
  }
  Read(i, true);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op));
  const std::vector<int64_t> sizes = Sizes(t);
  OpenLinear(t.elements());
  const std::vector<std::string> coords =
      broadcast ? Unravel(sizes, RowMajorOrder(sizes.size()), "l") : std::vector<std::string>(sizes.size(), "0");
  std::string value = absl::StrCat(OpFunction(op.op), "(", Operand(op.args[0], t, coords));
  if (op.kind == TileOp::Kind::kBinary) absl::StrAppend(&value, ", ", Operand(op.args[1], t, coords));
  e_.Linef(Buffer(i), "[l] = ", value, ");");
  e_.Close();
  Wrote(i, true);
}

void TiledGenerator::PlanMatmul(int i) {
  const TileInfo& out = tiles_[i];
  const TileInfo& a = tiles_[b_.tile_ops[i].args[0]];
  const size_t r = out.axes.size();
  MatmulPlan& plan = matmuls_[i];
  plan.rows = out.axes[r - 2].size;
  plan.cols = out.axes[r - 1].size;
  plan.depth = a.axes[r - 1].size;
  plan.batches = Product(Sizes(out), 0, r - 2);
  // Several rows per task read each B element once for all of them; as
  // many as still leave every thread a task.
  const int64_t rows = Useful(out.axes[r - 2]), cols = Useful(out.axes[r - 1]);
  for (int64_t p : {4, 2}) {
    if (p <= rows && plan.batches * ((rows + p - 1) / p) * cols >= b_.threads) {
      plan.per = p;
      break;
    }
  }
  plan.groups = (rows + plan.per - 1) / plan.per;
  plan.tasks = plan.batches * plan.groups * cols;
  while (plan.split < 16 && 2 * plan.split * plan.tasks <= b_.threads && 8 * plan.split <= plan.depth) {
    plan.split *= 2;
  }
  // Partial sums, a region per matmul: no barrier guards its reuse
  // within a step.
  const int64_t scratch = plan.split > 1 ? plan.split * plan.tasks * plan.per : 0;
  if (4 * (buffers_ + scratch_ + scratch) > ugraph::DeviceLimits().max_shared_memory_per_block) {
    plan.split = 1;
    return;
  }
  plan.scratch = scratch_;
  scratch_ += scratch;
}

void TiledGenerator::EmitMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0], bm = op.args[1];
  const TileInfo& out = tiles_[i];
  const size_t r = out.axes.size();
  const int64_t cols = Useful(out.axes[r - 1]);
  const bool fused = fused_into_[i] >= 0;
  const int target = fused ? fused_into_[i] : i;
  // Operands are rounded to the product's dtype, unless already stored so.
  const auto rounded = [&](int x, const std::string& v) {
    const TileOp& src = b_.tile_ops[x];
    const bool exact = op.dtype == DType::kF32 ||
                       (src.kind == TileOp::Kind::kInput &&
                        e_.graph().tensors[b_.inputs[src.input].view.tensor].dtype == op.dtype);
    return exact ? v : absl::StrCat("round_", DTypeSuffix(op.dtype), "(", v, ")");
  };
  Read(a, false);
  Read(bm, false);
  Read(target, false);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), fused ? absl::StrCat(", summed into x", target) : "", ": ",
           plan.per, " row(s) x 1 column per task, ", plan.tasks, " tasks, k split ", plan.split, " ways");
  const std::string store = fused ? " += " : " = ";
  const std::string m_length = Length(out.axes[r - 2]);
  e_.Open(absl::StrCat("for (int l = threadIdx.x; l < ", plan.tasks * plan.split, "; l += ", b_.threads, ")"));
  // Neighbouring threads take neighbouring columns (conflict-free B reads).
  e_.Linef("const int task = l % ", plan.tasks, ", slice = l / ", plan.tasks, ";");
  e_.Linef("const int col = task % ", cols, ", row0 = task / ", cols, " % ", plan.groups, " * ", plan.per,
           ", bt = ", plan.batches == 1 ? std::string("0") : absl::StrCat("task / ", plan.groups * cols), ";");
  e_.Linef("const float* pa = ", Buffer(a), " + (bt * ", plan.rows, " + row0) * ", plan.depth, ";");
  e_.Linef("const float* pb = ", Buffer(bm), " + bt * ", plan.depth * plan.cols, " + col;");
  e_.Linef("float acc[", plan.per, "];");
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) acc[q] = 0.0f;");
  // Tasks outside the tensor sum nothing (their values are never read).
  e_.Linef("const int kl = col < ", Length(out.axes[r - 1]), " && row0 < ", m_length, " ? ",
           Length(tiles_[a].axes[r - 1]), " : 0;");
  const auto fma = [&](const std::string& av, const std::string& bv) {
    return absl::StrCat("acc[q] = fmaf(", rounded(a, av), ", ", bv, ", acc[q]);");
  };
  // Chunks of 4 k: one 16-byte read of A per row where rows are aligned
  // (shared memory, not the FMAs, bounds this loop); slices take every
  // split-th chunk.
  static constexpr const char* kLane[4] = {"x", "y", "z", "w"};
  const std::string row = absl::StrCat("pa + q * ", plan.depth, " + c");
  e_.Open(absl::StrCat("for (int c = ", plan.split > 1 ? "slice * 4" : "0", "; c < kl; c += ", 4 * plan.split, ")"));
  e_.Open("if (c + 4 <= kl)");
  e_.Line("float bk[4];");
  e_.Linef("for (int j = 0; j < 4; ++j) bk[j] = ", rounded(bm, absl::StrCat("pb[(c + j) * ", plan.cols, "]")), ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int q = 0; q < ", plan.per, "; ++q)"));
  e_.Linef("const float4 av = ",
           plan.depth % 4 == 0 ? absl::StrCat("*reinterpret_cast<const float4*>(", row, ")")
                               : absl::StrCat("make_float4((", row, ")[0], (", row, ")[1], (", row, ")[2], (", row,
                                              ")[3])"),
           ";");
  for (int j = 0; j < 4; ++j) e_.Line(fma(absl::StrCat("av.", kLane[j]), absl::StrCat("bk[", j, "]")));
  e_.Close();
  e_.Close();
  e_.Open("else");
  e_.Open("for (int k = c; k < kl; ++k)");
  e_.Linef("const float bk = ", rounded(bm, absl::StrCat("pb[k * ", plan.cols, "]")), ";");
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) ", fma(absl::StrCat("pa[q * ", plan.depth, " + k]"), "bk"));
  e_.Close();
  e_.Close();
  e_.Close();
  const std::string element = absl::StrCat("(bt * ", plan.rows, " + row0 + q) * ", plan.cols, " + col");
  e_.Line("#pragma unroll");
  if (plan.split == 1) {
    e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) if (row0 + q < ", m_length, ") ", Buffer(target), "[",
             element, "]", store, "acc[q];");
    e_.Close();
    Wrote(target, false);
    return;
  }
  const std::string partial = absl::StrCat("scratch + ", plan.scratch);
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) (", partial, ")[l * ", plan.per, " + q] = acc[q];");
  e_.Close();
  Sync();
  e_.Linef("// x", i, ": add the ", plan.split, " partial sums of each output");
  e_.Open(absl::StrCat("for (int o = threadIdx.x; o < ", plan.tasks * plan.per, "; o += ", b_.threads, ")"));
  e_.Linef("const int task = o / ", plan.per, ", q = o % ", plan.per, ";");
  e_.Linef("const int col = task % ", cols, ", row0 = task / ", cols, " % ", plan.groups, " * ", plan.per,
           ", bt = ", plan.batches == 1 ? std::string("0") : absl::StrCat("task / ", plan.groups * cols), ";");
  e_.Line("float sum = 0.0f;");
  e_.Line("#pragma unroll");
  e_.Linef("for (int s = 0; s < ", plan.split, "; ++s) sum += (", partial, ")[(s * ", plan.tasks, " + task) * ",
           plan.per, " + q];");
  e_.Linef("if (row0 + q < ", m_length, ") ", Buffer(target), "[", element, "]", store, "sum;");
  e_.Close();
  Wrote(target, false);
}

void TiledGenerator::EmitReduce(int i) {
  const TileOp& op = b_.tile_ops[i];
  const int x = op.args[0];
  const std::vector<int64_t> in = Sizes(tiles_[x]);
  const int64_t size = in[op.axis];
  const int64_t inner = Product(in, op.axis + 1, in.size());
  const int64_t outputs = tiles_[i].elements();
  const std::string length = Length(tiles_[x].axes[op.axis]);
  // Output o = (outer, inner) reads input (outer, j, inner).
  const std::string element =
      inner == 1 ? absl::StrCat(Buffer(x), "[o * ", size, " + j]")
                 : absl::StrCat(Buffer(x), "[(o / ", inner, " * ", size, " + j) * ", inner, " + o % ", inner, "]");
  Read(x, false);
  if (size >= 32) {
    // A warp per output: lanes read neighbouring elements, then combine.
    Read(i, false);
    e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ": a warp per output");
    e_.Open(absl::StrCat("for (int o = threadIdx.x / 32; o < ", outputs, "; o += ", b_.threads / 32, ")"));
    e_.Line("float s = 0.0f;");
    e_.Linef("for (int j = threadIdx.x % 32; j < ", length, "; j += 32) s += ", element, ";");
    e_.Line("s = warp_reduce<false>(s);");
    e_.Linef("if (threadIdx.x % 32 == 0) ", Buffer(i), "[o] = s;");
    e_.Close();
    Wrote(i, false);
    return;
  }
  Read(i, true);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op));
  e_.Open(absl::StrCat("for (int o = threadIdx.x; o < ", outputs, "; o += ", b_.threads, ")"));
  e_.Line("float s = 0.0f;");
  e_.Linef("for (int j = 0; j < ", length, "; ++j) s += ", element, ";");
  e_.Linef(Buffer(i), "[o] = s;");
  e_.Close();
  Wrote(i, true);
}

void TiledGenerator::EmitAccumulate(int i) {
  if (fused_[i]) return;  // its matmul adds to it
  const int x = b_.tile_ops[i].args[0];
  Read(x, true);
  Read(i, true);
  e_.Linef("// x", i, " += x", x);
  OpenLinear(tiles_[i].elements());
  e_.Linef(Buffer(i), "[l] += ", Buffer(x), "[l];");
  e_.Close();
  Wrote(i, true);
}

void TiledGenerator::EmitOp(int i) {
  switch (b_.tile_ops[i].kind) {
    case TileOp::Kind::kInput: return EmitDirect(i);
    case TileOp::Kind::kConstant: return;  // a literal where it is used
    case TileOp::Kind::kUnary:
    case TileOp::Kind::kBinary: return EmitElementwise(i);
    case TileOp::Kind::kMatmul: return EmitMatmul(i);
    case TileOp::Kind::kReduceSum: return EmitReduce(i);
    case TileOp::Kind::kAccumulate: return EmitAccumulate(i);
  }
}

void TiledGenerator::EmitPhase(Phase phase) {
  const size_t n = b_.tile_ops.size();
  const auto input = [&](size_t i) { return phase_[i] == phase && b_.tile_ops[i].kind == TileOp::Kind::kInput; };
  // The loop's staged tiles were issued before the loop or by the previous
  // step; the others issue all their loads now, before any is converted.
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && inputs_[i].staged && phase != Phase::kLoop) {
      DeclareRaw(static_cast<int>(i));
      EmitStaged(static_cast<int>(i), /*issue=*/true);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && inputs_[i].staged) EmitStaged(static_cast<int>(i), /*issue=*/false);
  }
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && !inputs_[i].staged) EmitDirect(static_cast<int>(i));
  }
  if (phase == Phase::kLoop) EmitPrefetch(/*first=*/false);
  for (size_t i = 0; i < n; ++i) {
    if (phase_[i] == phase && b_.tile_ops[i].kind != TileOp::Kind::kInput) EmitOp(static_cast<int>(i));
  }
}

void TiledGenerator::EmitPrefetch(bool first) {
  const size_t n = b_.tile_ops.size();
  bool any = false;
  for (size_t i = 0; i < n; ++i) any = any || (phase_[i] == Phase::kLoop && inputs_[i].staged);
  if (!any) return;
  const int64_t tile = b_.forloop.tile;
  const std::string extent = b_.forloop.extent.rank() == 1 ? e_.DimExpr(b_.forloop.extent[0]) : "0LL";
  loop_start_ = first ? "0LL" : "k1";
  loop_length_ = first ? "kn0" : "kn1";
  if (first) {
    e_.Line("// the first step's loop tiles");
    e_.Linef("const i64 kn0 = ", extent, " < ", tile, " ? ", extent, " : ", tile, ";");
  } else {
    // The last step prefetches past the end: every element is out of range.
    e_.Line("// the next step's loop tiles, loaded while this step computes");
    e_.Linef("const i64 k1 = k0 + ", tile, ";");
    e_.Linef("const i64 kn1 = ", extent, " - k1 < ", tile, " ? ", extent, " - k1 : ", tile, ";");
  }
  for (size_t i = 0; i < n; ++i) {
    if (phase_[i] != Phase::kLoop || !inputs_[i].staged) continue;
    if (first) DeclareRaw(static_cast<int>(i));
    EmitStaged(static_cast<int>(i), /*issue=*/true);
  }
  loop_start_ = "k0";
  loop_length_ = "kn";
}

void TiledGenerator::EmitStores() {
  for (const ugraph::OutputSaver& o : b_.outputs) {
    const TileInfo& t = tiles_[o.value];
    const ugraph::DTensor& tensor = e_.graph().tensors[o.tensor];
    const bool constant = b_.tile_ops[o.value].kind == TileOp::Kind::kConstant;
    if (!constant) Read(o.value, true);
    e_.Linef("// t", o.tensor, " <- x", o.value);
    const std::vector<int64_t> sizes = Sizes(t);
    OpenLinear(t.elements());
    const std::vector<std::string> coords = Unravel(sizes, RowMajorOrder(sizes.size()), "l");
    std::vector<std::string> at(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) at[d] = Global(t.axes[d], coords[d]);
    const std::string in_range = InRange(t, coords);
    e_.Linef(in_range.empty() ? "" : absl::StrCat("if (", in_range, ") "), "store_",
             DTypeSuffix(tensor.dtype), "(p.t[", e_.Slot(o.tensor), "], ", e_.TensorOffset(o.tensor, at),
             ", ", constant ? Literal(b_.tile_ops[o.value].value, DType::kF32) : Buffer(o.value) + "[l]",
             ");");
    e_.Close();
  }
}

absl::Status TiledGenerator::Generate() {
  if (absl::Status s = Plan(); !s.ok()) return s;
  const size_t n = b_.tile_ops.size();
  e_.Line("extern __shared__ __align__(16) float smem[];");
  for (size_t i = 0; i < n; ++i) {
    if (offsets_[i] >= 0) e_.Linef("float* const ", Buffer(i), " = smem + ", offsets_[i], ";");
  }
  if (scratch_ > 0) e_.Linef("float* const scratch = smem + ", buffers_, ";");
  bool loop_axes = false;
  std::vector<bool> grid_axes(3, false);
  for (const TileInfo& t : tiles_) {
    for (const TileAxis& a : t.axes) {
      loop_axes = loop_axes || a.source == Source::kLoop;
      if (a.source == Source::kGrid) grid_axes[a.grid_axis] = true;
    }
  }
  const auto count = [&](const ugraph::LaunchDim& d) {
    return absl::StrCat("(", e_.NumelExpr(d.extent), " + ", d.tile - 1, ") / ", d.tile);
  };
  // Grid-stride loops, outermost z: a block may own several grid points.
  static constexpr const char* kBlockIdx[3] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static constexpr const char* kGridDim[3] = {"gridDim.x", "gridDim.y", "gridDim.z"};
  int opened = 0;
  for (int g = 2; g >= 0; --g) {
    const ugraph::LaunchDim& d = b_.grid[g];
    if (d.extent.rank() == 0) continue;
    e_.Open(absl::StrCat("for (i64 bg", g, " = ", kBlockIdx[g], "; bg", g, " < ", count(d), "; bg", g,
                         " += ", kGridDim[g], ")"));
    ++opened;
    if (grid_axes[g]) {
      const std::string extent = e_.DimExpr(d.extent[0]);
      e_.Linef("const i64 s", g, " = bg", g, " * ", d.tile, ";");
      e_.Linef("const i64 n", g, " = ", extent, " - s", g, " < ", d.tile, " ? ", extent, " - s", g, " : ",
               d.tile, ";");
    }
  }
  if (opened == 0) e_.Open("");
  EmitPhase(Phase::kBefore);
  bool loop = false;
  for (size_t i = 0; i < n; ++i) {
    loop = loop || phase_[i] == Phase::kLoop;
    if (b_.tile_ops[i].kind != TileOp::Kind::kAccumulate) continue;
    Read(static_cast<int>(i), true);
    e_.Linef("// x", i, " = 0");
    OpenLinear(tiles_[i].elements());
    e_.Linef(Buffer(i), "[l] = 0.0f;");
    e_.Close();
    Wrote(static_cast<int>(i), true);
  }
  if (loop) {
    EmitPrefetch(/*first=*/true);
    e_.Open(absl::StrCat("for (i64 step = 0; step < ", count(b_.forloop), "; ++step)"));
    if (loop_axes) {
      const int64_t tile = b_.forloop.tile;
      const std::string extent = e_.DimExpr(b_.forloop.extent[0]);
      e_.Linef("const i64 k0 = step * ", tile, ";");
      e_.Linef("const i64 kn = ", extent, " - k0 < ", tile, " ? ", extent, " - k0 : ", tile, ";");
    }
    // What is dirty before the loop stays so for what follows it: the
    // loop may run no step.
    const std::map<int, bool> before = dirty_;
    EmitPhase(Phase::kLoop);
    Sync();  // the next step overwrites the step tiles
    e_.Close();
    dirty_ = before;
  }
  EmitPhase(Phase::kAfter);
  EmitStores();
  if (opened > 0) Sync();  // the next grid point overwrites every tile
  for (int g = 0; g < std::max(opened, 1); ++g) e_.Close();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> GenerateTiled(Emitter& e, const BlockGraph& block) {
  absl::StatusOr<std::vector<TileInfo>> tiles = ugraph::AnalyzeTiles(block);
  if (!tiles.ok()) return tiles.status();
  TiledGenerator generator(e, block, *std::move(tiles));
  if (absl::Status s = generator.Generate(); !s.ok()) return s;
  return generator.shared_bytes();
}

}  // namespace kiln::codegen
