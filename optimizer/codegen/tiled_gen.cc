// Code for graph-defined blocks (BlockKind::kTiled).
//
// Every tile op owns an f32 buffer in dynamic shared memory (the layout
// SharedMemoryBytes counts), row-major over the op's tile axes. A thread
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

#include <map>

#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/codegen/thread_emitter.h"
#include "optimizer/tile_analysis.h"
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

 private:
  enum class Phase { kBefore, kLoop, kAfter };

  absl::Status Plan();
  void EmitOp(int i);
  // The ops of one phase, its input tiles first: their loads go out
  // together and one barrier covers them all.
  void EmitPhase(Phase phase);
  void EmitInput(int i);
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

  Emitter& e_;
  const BlockGraph& b_;
  std::vector<TileInfo> tiles_;
  std::vector<Phase> phase_;
  std::vector<int> fused_into_;  // a matmul summed straight into this accumulator, or -1
  std::vector<bool> fused_;      // an accumulator a matmul updates itself
  std::map<int, bool> dirty_;    // buffer -> written linearly
};

absl::Status TiledGenerator::Plan() {
  const size_t n = b_.tile_ops.size();
  for (size_t i = 0; i < b_.inputs.size(); ++i) {
    const ugraph::View& view = b_.inputs[i].view;
    if (view.tensor < 0) {
      return absl::UnimplementedError(absl::StrCat("codegen: tiled input #", i, " is a virtual source"));
    }
    const DType dtype = e_.graph().tensors[view.tensor].dtype;
    if (!IsFloatStorage(dtype)) {
      return absl::UnimplementedError(absl::StrCat("codegen: tiled input #", i, " is ", DTypeName(dtype),
                                                   "; tiles hold f32, f16 or bf16"));
    }
  }
  for (const ugraph::OutputSaver& o : b_.outputs) {
    const DType dtype = e_.graph().tensors[o.tensor].dtype;
    if (!IsFloatStorage(dtype)) {
      return absl::UnimplementedError(absl::StrCat("codegen: tiled output t", o.tensor, " is ",
                                                   DTypeName(dtype), "; tiles hold f32, f16 or bf16"));
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
    case Source::kLoop: return "k0";
    case Source::kFull:
    case Source::kOne: return "0LL";
  }
  KILN_UNREACHABLE("unknown tile axis source");
}

std::string TiledGenerator::Length(const TileAxis& a) const {
  switch (a.source) {
    case Source::kGrid: return absl::StrCat("n", a.grid_axis);
    case Source::kLoop: return "kn";
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

void TiledGenerator::EmitInput(int i) {
  const TileOp& op = b_.tile_ops[i];
  const TileInfo& t = tiles_[i];
  const ugraph::View& view = b_.inputs[op.input].view;
  const DType dtype = e_.graph().tensors[view.tensor].dtype;
  const std::string load = absl::StrCat("load_", DTypeSuffix(dtype));
  const std::string ptr = absl::StrCat("p.t[", e_.Slot(view.tensor), "]");
  const std::vector<int64_t> sizes = Sizes(t);
  const int rank = static_cast<int>(sizes.size());
  // Neighbouring threads read neighbouring elements of the dim adjacent in
  // memory (coalescing); that dim goes last in the unravel order.
  const int contiguous = ContiguousDim(e_.graph(), view);
  const int fast = contiguous >= 0 && sizes[contiguous] > 1 ? contiguous : rank - 1;
  std::vector<int> order;
  for (int d = 0; d < rank; ++d) {
    if (d != fast) order.push_back(d);
  }
  if (fast >= 0) order.push_back(fast);
  const auto global = [&](const std::vector<std::string>& coords) {
    std::vector<std::string> g(rank);
    for (int d = 0; d < rank; ++d) g[d] = Global(t.axes[d], coords[d]);
    return g;
  };
  // 16-byte vectors along the last dim when it is unit-stride for sure:
  // the view only permutes and slices (reshapes and expands can break runs).
  bool plain_view = true;
  for (const ugraph::ViewStep& s : view.steps) {
    plain_view = plain_view && (s.kind == ugraph::ViewStep::Kind::kPermute ||
                                s.kind == ugraph::ViewStep::Kind::kSlice);
  }
  const int64_t width = 16 / static_cast<int64_t>(DTypeSize(dtype));
  const bool vector = plain_view && rank > 0 && contiguous == rank - 1 && sizes[rank - 1] % width == 0;
  Read(i, false);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ": t", view.tensor, " ", DTypeName(dtype),
           vector ? absl::StrCat(", ", width, " per 16-byte load") : "");
  if (!vector) {
    OpenLinear(t.elements());
    const std::vector<std::string> coords = Unravel(sizes, order, "l");
    e_.Line("float v = 0.0f;");
    const std::string in_range = InRange(t, coords);
    if (!in_range.empty()) e_.Open(absl::StrCat("if (", in_range, ")"));
    e_.Linef("v = ", load, "(", ptr, ", ", e_.Offset(view, global(coords)), ");");
    if (!in_range.empty()) e_.Close();
    e_.Linef(Buffer(i), "[", RowMajor(sizes, coords), "] = v;");
    e_.Close();
    Wrote(i, false);
    return;
  }
  std::vector<int64_t> vectors = sizes;
  vectors[rank - 1] /= width;
  OpenLinear(t.elements() / width);
  std::vector<std::string> coords = Unravel(vectors, order, "l");
  const std::string last = e_.Fresh("i");
  e_.Linef("const int ", last, " = ", coords[rank - 1], " * ", width, ";");
  coords[rank - 1] = last;
  e_.Linef("float* const dst = ", Buffer(i), " + ", RowMajor(sizes, coords), ";");
  // The whole vector in range and aligned: one load; otherwise per element.
  std::string whole = InRange(t, coords, rank - 1);
  const TileAxis& axis = t.axes[rank - 1];
  if (axis.source == Source::kGrid || axis.source == Source::kLoop) {
    absl::StrAppend(&whole, whole.empty() ? "" : " && ", last, " + ", width, " <= ", Length(axis));
  }
  e_.Line("bool loaded = false;");
  e_.Open(whole.empty() ? std::string() : absl::StrCat("if (", whole, ")"));
  e_.Linef("const i64 off = ", e_.Offset(view, global(coords)), ";");
  e_.Open(absl::StrCat("if (aligned16(", ptr, ", off, ", DTypeSize(dtype), "))"));
  e_.Linef("load16_", DTypeSuffix(dtype), "(", ptr, ", off, dst);");
  e_.Line("loaded = true;");
  e_.Close();
  e_.Close();
  e_.Open("if (!loaded)");
  e_.Open(absl::StrCat("for (int j = 0; j < ", width, "; ++j)"));
  std::vector<std::string> element = coords;
  element[rank - 1] = absl::StrCat("(", last, " + j)");
  e_.Line("float v = 0.0f;");
  const std::string in_range = InRange(t, element);
  if (!in_range.empty()) e_.Open(absl::StrCat("if (", in_range, ")"));
  e_.Linef("v = ", load, "(", ptr, ", ", e_.Offset(view, global(element)), ");");
  if (!in_range.empty()) e_.Close();
  e_.Line("dst[j] = v;");
  e_.Close();
  e_.Close();
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
  std::vector<int> order(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) order[d] = static_cast<int>(d);
  OpenLinear(t.elements());
  const std::vector<std::string> coords =
      broadcast ? Unravel(sizes, order, "l") : std::vector<std::string>(sizes.size(), "0");
  std::string value = absl::StrCat(OpFunction(op.op), "(", Operand(op.args[0], t, coords));
  if (op.kind == TileOp::Kind::kBinary) absl::StrAppend(&value, ", ", Operand(op.args[1], t, coords));
  e_.Linef(Buffer(i), "[l] = ", value, ");");
  e_.Close();
  Wrote(i, true);
}

void TiledGenerator::EmitMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const int a = op.args[0], bm = op.args[1];
  const TileInfo& out = tiles_[i];
  const size_t r = out.axes.size();
  const int64_t rows = out.axes[r - 2].size, cols = out.axes[r - 1].size;
  const int64_t depth = tiles_[a].axes[r - 1].size;
  const int64_t batches = Product(Sizes(out), 0, r - 2);
  // Each thread computes `per` rows of one column: the B element is read
  // once for all of them. As many rows as still leave every thread a task.
  int64_t per = 1;
  for (int64_t p : {8, 4, 2}) {
    if (rows % p == 0 && batches * (rows / p) * cols >= b_.threads) {
      per = p;
      break;
    }
  }
  const int64_t groups = rows / per;
  const int target = fused_into_[i] >= 0 ? fused_into_[i] : i;
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
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op),
           fused_into_[i] >= 0 ? absl::StrCat(", summed into x", target) : "", ": ", per,
           " row(s) x 1 column per thread");
  e_.Open(absl::StrCat("for (int l = threadIdx.x; l < ", batches * groups * cols, "; l += ", b_.threads, ")"));
  e_.Linef("const int col = l % ", cols, ", row0 = (l / ", cols, ") % ", groups, " * ", per,
           ", bt = ", batches == 1 ? std::string("0") : absl::StrCat("l / ", groups * cols), ";");
  e_.Linef("if (col >= ", Length(out.axes[r - 1]), " || row0 >= ", Length(out.axes[r - 2]), ") continue;");
  e_.Linef("const float* pa = ", Buffer(a), " + (bt * ", rows, " + row0) * ", depth, ";");
  e_.Linef("const float* pb = ", Buffer(bm), " + bt * ", depth * cols, " + col;");
  e_.Linef("float acc[", per, "];");
  e_.Linef("for (int q = 0; q < ", per, "; ++q) acc[q] = 0.0f;");
  e_.Line("#pragma unroll 4");
  e_.Open(absl::StrCat("for (int k = 0; k < ", Length(tiles_[a].axes[r - 1]), "; ++k)"));
  e_.Linef("const float bk = ", rounded(bm, absl::StrCat("pb[k * ", cols, "]")), ";");
  e_.Line("#pragma unroll");
  e_.Linef("for (int q = 0; q < ", per, "; ++q) acc[q] = fmaf(",
           rounded(a, absl::StrCat("pa[q * ", depth, " + k]")), ", bk, acc[q]);");
  e_.Close();
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int q = 0; q < ", per, "; ++q)"));
  e_.Linef("if (row0 + q < ", Length(out.axes[r - 2]), ") ", Buffer(target), "[(bt * ", rows,
           " + row0 + q) * ", cols, " + col] ", fused_into_[i] >= 0 ? "+=" : "=", " acc[q];");
  e_.Close();
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
    case TileOp::Kind::kInput: return EmitInput(i);
    case TileOp::Kind::kConstant: return;  // a literal where it is used
    case TileOp::Kind::kUnary:
    case TileOp::Kind::kBinary: return EmitElementwise(i);
    case TileOp::Kind::kMatmul: return EmitMatmul(i);
    case TileOp::Kind::kReduceSum: return EmitReduce(i);
    case TileOp::Kind::kAccumulate: return EmitAccumulate(i);
  }
}

void TiledGenerator::EmitPhase(Phase phase) {
  for (bool inputs : {true, false}) {
    for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
      const bool input = b_.tile_ops[i].kind == TileOp::Kind::kInput;
      if (phase_[i] == phase && input == inputs) EmitOp(static_cast<int>(i));
    }
  }
}

void TiledGenerator::EmitStores() {
  for (const ugraph::OutputSaver& o : b_.outputs) {
    const TileInfo& t = tiles_[o.value];
    const ugraph::DTensor& tensor = e_.graph().tensors[o.tensor];
    const bool constant = b_.tile_ops[o.value].kind == TileOp::Kind::kConstant;
    if (!constant) Read(o.value, true);
    e_.Linef("// t", o.tensor, " <- x", o.value);
    const std::vector<int64_t> sizes = Sizes(t);
    std::vector<int> order(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) order[d] = static_cast<int>(d);
    OpenLinear(t.elements());
    const std::vector<std::string> coords = Unravel(sizes, order, "l");
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
  // Buffers in op order, as SharedMemoryBytes counts them.
  e_.Line("extern __shared__ __align__(16) float smem[];");
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kConstant && fused_into_[i] < 0) {
      e_.Linef("float* const ", Buffer(i), " = smem + ", offset, ";");
    }
    offset += tiles_[i].elements();
  }
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

absl::Status GenerateTiled(Emitter& e, const BlockGraph& block) {
  absl::StatusOr<std::vector<TileInfo>> tiles = ugraph::AnalyzeTiles(block);
  if (!tiles.ok()) return tiles.status();
  return TiledGenerator(e, block, *std::move(tiles)).Generate();
}

}  // namespace kiln::codegen
