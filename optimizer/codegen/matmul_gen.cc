#include "optimizer/codegen/matmul_gen.h"

#include <algorithm>
#include <functional>

#include "optimizer/codegen/thread_emitter.h"

namespace kiln::codegen {

using ugraph::BlockGraph;

namespace {

std::vector<int> NonUnitAxes(const Shape& shape) {
  std::vector<int> axes;
  for (int d = 0; d < shape.rank(); ++d) {
    if (!(shape[d] == Dim(1))) axes.push_back(d);
  }
  return axes;
}

}  // namespace

bool ReshapesUnitAxesOnly(const Shape& in, const Shape& out) {
  const std::vector<int> a = NonUnitAxes(in), b = NonUnitAxes(out);
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(in[a[i]] == out[b[i]])) return false;
  }
  return true;
}

int ContiguousDim(const ugraph::KernelGraph& graph, const ugraph::View& view) {
  const ugraph::DTensor& t = graph.tensors[view.tensor];
  int d = t.shape.rank() - 1;
  if (!t.strides.empty()) {
    d = -1;
    for (int k = t.shape.rank() - 1; k >= 0; --k) {
      if (t.strides[k] == 1 && !(t.shape[k] == Dim(1))) d = k;
    }
  }
  Shape in = view.source_shape;
  for (const ugraph::ViewStep& s : view.steps) {
    if (d < 0) return -1;
    switch (s.kind) {
      case ugraph::ViewStep::Kind::kPermute: {
        auto it = std::find(s.perm.begin(), s.perm.end(), d);
        d = static_cast<int>(it - s.perm.begin());
        break;
      }
      case ugraph::ViewStep::Kind::kSlice:
        if (s.ranges[d].step != 1) return -1;
        break;
      case ugraph::ViewStep::Kind::kExpand:
        d += s.shape.rank() - in.rank();
        if (in[d - (s.shape.rank() - in.rank())] == Dim(1) && !(s.shape[d] == Dim(1))) return -1;  // broadcast
        break;
      case ugraph::ViewStep::Kind::kReshape:
        if (ReshapesUnitAxesOnly(in, s.shape) && !(in[d] == Dim(1))) {
          const std::vector<int> from = NonUnitAxes(in), to = NonUnitAxes(s.shape);
          d = to[std::find(from.begin(), from.end(), d) - from.begin()];
        } else {
          d = d == in.rank() - 1 ? s.shape.rank() - 1 : -1;
        }
        break;
    }
    in = s.shape;
  }
  return d;
}

namespace {

struct Operands {
  std::string m, n, k;                  // size expressions
  std::vector<std::string> batch;       // batch coordinates of the block
  Shape batch_shape;
};

// Emits the loops over batch and M tiles; the caller fills in the body.
Operands OpenTileLoops(Emitter& e, const BlockGraph& b) {
  Operands o;
  const Shape& a = b.inputs[0].view.shape;
  const Shape& bs = b.inputs[1].view.shape;
  const int r = a.rank();
  o.batch_shape = Shape(a.dims().subspan(0, r - 2));
  o.m = e.DimExpr(a[r - 2]);
  o.k = e.DimExpr(a[r - 1]);
  o.n = e.DimExpr(bs[r - 1]);
  e.Linef("const i64 M = ", o.m, ", N = ", o.n, ", K = ", o.k, ";");
  e.Linef("const i64 batches = ", e.NumelExpr(o.batch_shape), ";");
  e.Linef("const i64 m_tiles = (M + ", b.tiles.m - 1, ") / ", b.tiles.m, ";");
  e.Open("for (i64 bz = blockIdx.z; bz < batches; bz += gridDim.z)");
  o.batch = e.Unravel("bz", o.batch_shape);
  e.Open("for (i64 by = blockIdx.y; by < m_tiles; by += gridDim.y)");
  e.Linef("const i64 m0 = by * ", b.tiles.m, ", n0 = static_cast<i64>(blockIdx.x) * ", b.tiles.n, ";");
  return o;
}

std::vector<std::string> With(std::vector<std::string> batch, const std::string& x, const std::string& y) {
  batch.push_back(x);
  batch.push_back(y);
  return batch;
}

// Runs the epilogue for the output element (gm, gn) holding `acc`.
void Epilogue(Emitter& e, const BlockGraph& b, const Operands& o, const std::string& gm,
              const std::string& gn, const std::string& acc) {
  e.Open(absl::StrCat("if (", gm, " < M && ", gn, " < N)"));
  const std::vector<std::string> coords = With(o.batch, gm, gn);
  ThreadEmitter te(e, b, coords, {acc});
  const std::vector<std::string> values = te.Emit(b.epilogue);
  for (const ugraph::OutputSaver& out : b.outputs) {
    const ugraph::DTensor& t = e.graph().tensors[out.tensor];
    e.Linef("store_", DTypeSuffix(t.dtype), "(p.t[", e.Slot(out.tensor), "], ",
            e.TensorOffset(out.tensor, coords), ", ", values[out.value], ");");
  }
  e.Close();
}

// Runs the epilogue for every element of a warp's mt x nt mma.sync
// accumulator fragments acc[i][j][4] (rows g and g + 8, columns 2t and
// 2t + 1 of each 16 x 8 fragment).
void FragmentEpilogue(Emitter& e, const BlockGraph& b, const Operands& o, int64_t mt, int64_t nt) {
  e.Open(absl::StrCat("for (int i = 0; i < ", mt, "; ++i)"));
  e.Open(absl::StrCat("for (int j = 0; j < ", nt, "; ++j)"));
  e.Open("for (int q = 0; q < 4; ++q)");
  e.Line("const i64 gm = m0 + wm0 + 16 * i + lane / 4 + (q >= 2 ? 8 : 0);");
  e.Line("const i64 gn = n0 + wn0 + 8 * j + 2 * (lane % 4) + (q & 1);");
  Epilogue(e, b, o, "gm", "gn", "acc[i][j][q]");
  e.Close();
  e.Close();
  e.Close();
}

// The value of a quantized read (ugraph::QuantRead) at `coords` of its view:
// value c[-1] of row c[:-1] of the blocks, decoded in f32.
std::string DecodedValue(Emitter& e, const ugraph::View& view, const ugraph::QuantRead& quant,
                         const std::vector<std::string>& coords) {
  std::vector<std::string> c = e.Invert(view, coords);
  const std::string col = c.back();
  c.back() = "0LL";
  return absl::StrCat("dequant_", QuantDecoderName(quant.format), "(",
                      BlockBytes(e, view.tensor, e.TensorOffset(view.tensor, c)), ", ", col, ")");
}

// Loads one operand tile into shared memory: element (x, y) of the tile,
// x over `rows` and y over `cols`, goes to `store(x, y, value)`. `fast_y`
// chooses which index varies fastest across threads (the one adjacent in
// memory, for coalescing). Values are `loader(pointer, offset)`; those of a
// quantized read are `from_decoded(its decoded f32 value)`.
void LoadTile(Emitter& e, const BlockGraph& b, const Operands& o, int input, int64_t rows,
              int64_t cols, bool fast_y, const std::string& row0, const std::string& col0,
              const std::string& row_limit, const std::string& col_limit, bool a_operand,
              const std::string& value_type, const std::string& loader,
              const std::function<std::string(const std::string&, const std::string&)>& store,
              const std::function<std::string(const std::string&)>& from_decoded) {
  const ugraph::View& view = b.inputs[input].view;
  e.Open(absl::StrCat("for (int idx = threadIdx.x; idx < ", rows * cols, "; idx += ", b.threads, ")"));
  if (fast_y) {
    e.Linef("const int x = idx / ", cols, ", y = idx % ", cols, ";");
  } else {
    e.Linef("const int x = idx % ", rows, ", y = idx / ", rows, ";");
  }
  e.Linef("const i64 gx = ", row0, " + x, gy = ", col0, " + y;");
  e.Linef(value_type, " value = 0;");
  e.Open(absl::StrCat("if (gx < ", row_limit, " && gy < ", col_limit, ")"));
  // A is [.., M, K] read at (gx = m, gy = k); B is [.., K, N] read at (gy = k, gx = n).
  const std::vector<std::string> coords = a_operand ? With(o.batch, "gx", "gy") : With(o.batch, "gy", "gx");
  if (const std::optional<ugraph::QuantRead>& quant = b.inputs[input].quant) {
    e.Linef("value = ", from_decoded(DecodedValue(e, view, *quant, coords)), ";");
  } else {
    e.Linef("value = ", loader, "(p.t[", e.Slot(view.tensor), "], ", e.Offset(view, coords), ");");
  }
  e.Close();
  e.Line(store("x", "y"));
  e.Close();
}

absl::Status GenerateSimt(Emitter& e, const BlockGraph& b) {
  const int64_t bm = b.tiles.m, bn = b.tiles.n, bk = b.tiles.k;
  if (b.threads != 256 || bm % 16 != 0 || bn % 16 != 0) {
    return absl::UnimplementedError("codegen: SIMT matmul needs 256 threads and 16-multiple tiles");
  }
  const ugraph::View& av = b.inputs[0].view;
  const ugraph::View& bv = b.inputs[1].view;
  const DType in_dtype = b.tiles.dtype;
  const bool is_float = IsFloating(in_dtype);
  const std::string ct = is_float ? "float" : "i64";
  const int r = av.shape.rank();
  e.Linef("__shared__ ", ct, " As[", bk, "][", bm + 1, "];");
  e.Linef("__shared__ ", ct, " Bs[", bk, "][", bn + 1, "];");
  const Operands o = OpenTileLoops(e, b);
  const int64_t tm = bm / 16, tn = bn / 16;
  e.Line("const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;");
  e.Linef(ct, " acc[", tm, "][", tn, "];");
  e.Linef("for (int i = 0; i < ", tm, "; ++i) for (int j = 0; j < ", tn, "; ++j) acc[i][j] = 0;");
  e.Open(absl::StrCat("for (i64 k0 = 0; k0 < K; k0 += ", bk, ")"));
  const auto loader = [&](const ugraph::View& view) {
    return absl::StrCat("load_", DTypeSuffix(e.graph().tensors[view.tensor].dtype));
  };
  // Decoded values rounded as the dequantize op rounds them.
  const auto from_decoded = [&](const std::string& v) { return RoundedTo(in_dtype, v); };
  // A tile: x = m, y = k. B tile: x = n, y = k.
  LoadTile(e, b, o, 0, bm, bk, ContiguousDim(e.graph(), av) != r - 2, "m0", "k0", "M", "K", true, ct,
           loader(av), [](const std::string& x, const std::string& y) {
             return absl::StrCat("As[", y, "][", x, "] = value;");
           }, from_decoded);
  LoadTile(e, b, o, 1, bn, bk, ContiguousDim(e.graph(), bv) == r - 2, "n0", "k0", "N", "K", false, ct,
           loader(bv), [](const std::string& x, const std::string& y) {
             return absl::StrCat("Bs[", y, "][", x, "] = value;");
           }, from_decoded);
  e.Line("__syncthreads();");
  e.Open(absl::StrCat("for (int kk = 0; kk < ", bk, "; ++kk)"));
  e.Linef(ct, " a[", tm, "], bv[", tn, "];");
  e.Linef("for (int i = 0; i < ", tm, "; ++i) a[i] = As[kk][ty + 16 * i];");
  e.Linef("for (int j = 0; j < ", tn, "; ++j) bv[j] = Bs[kk][tx + 16 * j];");
  e.Linef("for (int i = 0; i < ", tm, "; ++i) for (int j = 0; j < ", tn, "; ++j) acc[i][j] = ",
          is_float ? "fmaf(a[i], bv[j], acc[i][j]);" : "op_add(acc[i][j], op_mul(a[i], bv[j]));");
  e.Close();
  e.Line("__syncthreads();");
  e.Close();
  e.Open(absl::StrCat("for (int i = 0; i < ", tm, "; ++i)"));
  e.Open(absl::StrCat("for (int j = 0; j < ", tn, "; ++j)"));
  e.Line("const i64 gm = m0 + ty + 16 * i, gn = n0 + tx + 16 * j;");
  Epilogue(e, b, o, "gm", "gn", "acc[i][j]");
  e.Close();
  e.Close();
  e.Close();
  e.Close();
  return absl::OkStatus();
}

absl::Status GenerateMma(Emitter& e, const BlockGraph& b) {
  const int64_t bm = b.tiles.m, bn = b.tiles.n, bk = b.tiles.k;
  if (b.threads != 128 || bn != 64 || bk % 16 != 0 || (bm != 64 && bm != 16)) {
    return absl::UnimplementedError("codegen: mma matmul needs 128 threads, 64-wide N tiles and M tiles of 16 or 64");
  }
  const ugraph::View& av = b.inputs[0].view;
  const ugraph::View& bv = b.inputs[1].view;
  const DType in_dtype = b.tiles.dtype;
  if (in_dtype != DType::kF16 && in_dtype != DType::kBF16) {
    return absl::UnimplementedError("codegen: mma matmul needs f16 or bf16 operands");
  }
  const int r = av.shape.rank();
  const int64_t ld = bk + 8;  // padding spreads rows over banks
  // Warp layout: 2x2 warps of 32x32 for 64-row tiles, 1x4 of 16x16 for 16.
  const int64_t warps_m = bm == 64 ? 2 : 1, warps_n = 4 / warps_m;
  const int64_t wm = bm / warps_m, wn = bn / warps_n;
  const int64_t mt = wm / 16, nt = wn / 8;
  e.Linef("__shared__ __align__(16) unsigned short As[", bm, "][", ld, "];");
  e.Linef("__shared__ __align__(16) unsigned short Bs[", bn, "][", ld, "];");
  const Operands o = OpenTileLoops(e, b);
  e.Line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  e.Linef("const int wm0 = (warp / ", warps_n, ") * ", wm, ", wn0 = (warp % ", warps_n, ") * ", wn, ";");
  e.Linef("float acc[", mt, "][", nt, "][4];");
  e.Linef("for (int i = 0; i < ", mt, "; ++i) for (int j = 0; j < ", nt,
          "; ++j) for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;");
  e.Open(absl::StrCat("for (i64 k0 = 0; k0 < K; k0 += ", bk, ")"));
  // 16-bit operands load as they are; wider ones (f32 intermediates) are
  // rounded to the product's dtype, which the tensor cores take.
  const auto loader = [&](const ugraph::View& view) {
    const DType stored = e.graph().tensors[view.tensor].dtype;
    if (stored == in_dtype) return std::string("load_raw16");
    return std::string(in_dtype == DType::kF16 ? "load_f32_as_f16" : "load_f32_as_bf16");
  };
  // Decoded values go to the tensor cores' dtype in one rounding: the
  // dequantize op's, when it decodes to that dtype (matmul operands match).
  const auto from_decoded = [&](const std::string& v) {
    return absl::StrCat(in_dtype == DType::kF16 ? "float_to_f16(" : "float_to_bf16(", v, ")");
  };
  LoadTile(e, b, o, 0, bm, bk, ContiguousDim(e.graph(), av) != r - 2, "m0", "k0", "M", "K", true,
           "unsigned short", loader(av), [](const std::string& x, const std::string& y) {
             return absl::StrCat("As[", x, "][", y, "] = value;");
           }, from_decoded);
  LoadTile(e, b, o, 1, bn, bk, ContiguousDim(e.graph(), bv) == r - 2, "n0", "k0", "N", "K", false,
           "unsigned short", loader(bv), [](const std::string& x, const std::string& y) {
             return absl::StrCat("Bs[", x, "][", y, "] = value;");
           }, from_decoded);
  e.Line("__syncthreads();");
  e.Open(absl::StrCat("for (int ks = 0; ks < ", bk, "; ks += 16)"));
  e.Linef("unsigned af[", mt, "][4], bf[", nt, "][2];");
  e.Linef("for (int i = 0; i < ", mt, "; ++i) load_a_fragment(af[i], &As[wm0 + 16 * i][ks], ", ld, ");");
  e.Linef("for (int j = 0; j < ", nt, "; ++j) load_b_fragment(bf[j], &Bs[wn0 + 8 * j][ks], ", ld, ");");
  e.Linef("for (int i = 0; i < ", mt, "; ++i) for (int j = 0; j < ", nt, "; ++j) ",
          in_dtype == DType::kF16 ? "mma_f16" : "mma_bf16", "(acc[i][j], af[i], bf[j]);");
  e.Close();
  e.Line("__syncthreads();");
  e.Close();
  FragmentEpilogue(e, b, o, mt, nt);
  e.Close();
  e.Close();
  return absl::OkStatus();
}

// The pipelined tensor-core product for many rows (prefill): 256 threads,
// tiles of 64 or 128 in M and N and 32 in K, warps 2 x 4. Each thread
// stages chunks of 8 consecutive k elements of A and of B in registers (one
// 16-byte load each, or two for f32, where the chunk is in bounds, aligned
// and contiguous; element by element otherwise), so the next K tile's
// loads are in flight while the tensor cores work on this one; the chunks
// then go, rounded to the product's dtype, to the other of two shared
// buffers, read back by ldmatrix. One barrier per K tile.
absl::Status GeneratePipelinedMma(Emitter& e, const BlockGraph& b) {
  const int64_t bm = b.tiles.m, bn = b.tiles.n;
  if (b.threads != 256 || b.tiles.k != 32 || (bm != 64 && bm != 128) || (bn != 64 && bn != 128)) {
    return absl::UnimplementedError(
        "codegen: the pipelined mma matmul needs 256 threads, M and N tiles of 64 or 128 and K tiles of 32");
  }
  const DType dtype = b.tiles.dtype;
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::UnimplementedError("codegen: mma matmul needs f16 or bf16 operands");
  }
  const ugraph::View& av = b.inputs[0].view;
  const int r = av.shape.rank();
  for (int input = 0; input < 2; ++input) {
    const int64_t size = DTypeSize(e.graph().tensors[b.inputs[input].view.tensor].dtype);
    if (size != 2 && size != 4) return absl::UnimplementedError("codegen: mma operands are stored in 2 or 4 bytes");
  }
  constexpr int64_t kLd = 40;  // 32 k and 8 of padding: ldmatrix rows fall in distinct banks
  const int64_t wm = bm / 2, wn = bn / 4, mt = wm / 16, nt = wn / 8;
  e.Linef("__shared__ __align__(16) unsigned short As[2][", bm, "][", kLd, "];");
  e.Linef("__shared__ __align__(16) unsigned short Bs[2][", bn, "][", kLd, "];");
  const Operands o = OpenTileLoops(e, b);
  e.Line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  e.Linef("const int wm0 = (warp / 4) * ", wm, ", wn0 = (warp % 4) * ", wn, ";");
  e.Linef("float acc[", mt, "][", nt, "][4];");
  e.Linef("for (int i = 0; i < ", mt, "; ++i) for (int j = 0; j < ", nt,
          "; ++j) for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;");

  // An operand's chunks: `name` A (rows m) or B (rows n), `rows` its tile's.
  struct Staged {
    int input;
    std::string name, row0, limit;
    int64_t chunks, element, vectors, per;  // chunks per thread; bytes per element; uint4 per chunk; elements per uint4
    bool contiguous;
  };
  std::vector<Staged> staged;
  for (int input = 0; input < 2; ++input) {
    const ugraph::View& view = b.inputs[input].view;
    Staged st;
    st.input = input;
    st.name = input == 0 ? "a" : "b";
    st.row0 = input == 0 ? "m0" : "n0";
    st.limit = input == 0 ? "M" : "N";
    st.chunks = (input == 0 ? bm : bn) * 4 / 256;
    st.element = DTypeSize(e.graph().tensors[view.tensor].dtype);
    st.vectors = st.element / 2;
    st.per = 16 / st.element;
    st.contiguous = ContiguousDim(e.graph(), view) == (input == 0 ? r - 1 : r - 2);
    staged.push_back(st);
    e.Linef("uint4 ", st.name, "_stage[", st.chunks, "][", st.vectors, "];");
  }
  // A is [.., M, K] read at (row, k); B is [.., K, N] read at (k, row).
  const auto coords = [&](const Staged& st, const std::string& row, const std::string& k) {
    return st.input == 0 ? With(o.batch, row, k) : With(o.batch, k, row);
  };
  // Chunk i of this thread: row x of the tile, k elements kc .. kc + 7 (the
  // same place for the load and the store).
  const std::string chunk_index = "const int c = threadIdx.x + 256 * i, x = c / 4, kc = (c % 4) * 8;";
  // Loads K tile `k0`'s chunks into the stage registers.
  const auto load_stage = [&]() {
    for (const Staged& st : staged) {
      const ugraph::View& view = b.inputs[st.input].view;
      const int slot = e.Slot(view.tensor);
      e.Open(absl::StrCat("for (int i = 0; i < ", st.chunks, "; ++i)"));
      e.Line(chunk_index);
      e.Linef("const i64 gx = ", st.row0, " + x, gk = k0 + kc;");
      e.Linef("for (int v = 0; v < ", st.vectors, "; ++v) ", st.name, "_stage[i][v] = make_uint4(0u, 0u, 0u, 0u);");
      if (st.contiguous) {
        e.Linef("const i64 at = ", e.Offset(view, coords(st, "gx", "gk")), ";");
        e.Open(absl::StrCat("if (gx < ", st.limit, " && gk + 8 <= K && aligned16(p.t[", slot, "], at, ", st.element,
                            "))"));
        e.Linef("for (int v = 0; v < ", st.vectors, "; ++v) ", st.name, "_stage[i][v] = load16_bits(p.t[", slot,
                "], at + v * ", st.per, ", ", st.element, ");");
        e.Close();
        e.Open(absl::StrCat("else if (gx < ", st.limit, ")"));
      } else {
        e.Open(absl::StrCat("if (gx < ", st.limit, ")"));
      }
      e.Open("for (int j = 0; j < 8; ++j)");
      e.Open("if (gk + j < K)");
      const std::string at = e.Offset(view, coords(st, "gx", "(gk + j)"));
      const std::string bits = st.element == 2 ? absl::StrCat("load_raw16(p.t[", slot, "], ", at, ")")
                                               : absl::StrCat("__float_as_uint(load_f32(p.t[", slot, "], ", at, "))");
      e.Linef("set_vector_bits(", st.name, "_stage[i][j / ", st.per, "], j % ", st.per, ", ", bits, ", ", st.element,
              ");");
      e.Close();
      e.Close();
      e.Close();
      e.Close();
    }
  };
  // Stores the stage registers, in the product's dtype, to buffer `buf`.
  const auto store_stage = [&](const std::string& buf) {
    for (const Staged& st : staged) {
      const DType stored = e.graph().tensors[b.inputs[st.input].view.tensor].dtype;
      const std::string tile = absl::StrCat(st.input == 0 ? "As[" : "Bs[", buf, "][x][kc]");
      e.Open(absl::StrCat("for (int i = 0; i < ", st.chunks, "; ++i)"));
      e.Line(chunk_index);
      if (stored == dtype) {
        e.Linef("*reinterpret_cast<uint4*>(&", tile, ") = ", st.name, "_stage[i][0];");
      } else {
        e.Linef("float f[8];");
        e.Linef("for (int j = 0; j < 8; ++j) f[j] = bits_to_", DTypeSuffix(stored), "(vector_bits(", st.name,
                "_stage[i][j / ", st.per, "], j % ", st.per, ", ", st.element, "));");
        const std::string pack = dtype == DType::kF16 ? "pack_f16x2" : "pack_bf16x2";
        e.Linef("*reinterpret_cast<uint4*>(&", tile, ") = make_uint4(", pack, "(f[0], f[1]), ", pack, "(f[2], f[3]), ",
                pack, "(f[4], f[5]), ", pack, "(f[6], f[7]));");
      }
      e.Close();
    }
  };
  e.Line("i64 k0 = 0;");
  load_stage();
  store_stage("0");
  e.Line("__syncthreads();");
  e.Open("for (i64 kt = 0, k_tiles = (K + 31) / 32; kt < k_tiles; ++kt)");
  e.Line("const int cur = static_cast<int>(kt & 1);");
  e.Line("k0 = (kt + 1) * 32;");
  e.Open("if (kt + 1 < k_tiles)");
  load_stage();
  e.Close();
  e.Open("for (int ks = 0; ks < 32; ks += 16)");
  e.Linef("unsigned af[", mt, "][4], bf[", nt, "][2];");
  // ldmatrix: lane q * 8 + rr addresses row rr of 8x8 matrix q.
  e.Line("const int q = lane / 8, rr = lane % 8;");
  e.Linef("for (int i = 0; i < ", mt,
          "; ++i) load_a_fragment_x4(af[i], &As[cur][wm0 + 16 * i + rr + (q & 1) * 8][ks + (q >> 1) * 8]);");
  e.Linef("for (int j = 0; j < ", nt,
          "; j += 2) load_b_fragments_rows_x2(&bf[j][0], shared_address(&Bs[cur][wn0 + 8 * j + (lane / 16) * 8 + rr]"
          "[ks + ((lane / 8) & 1) * 8]));");
  e.Linef("for (int i = 0; i < ", mt, "; ++i) for (int j = 0; j < ", nt, "; ++j) ",
          dtype == DType::kF16 ? "mma_f16" : "mma_bf16", "(acc[i][j], af[i], bf[j]);");
  e.Close();
  e.Open("if (kt + 1 < k_tiles)");
  store_stage("cur ^ 1");
  e.Close();
  e.Line("__syncthreads();");
  e.Close();
  FragmentEpilogue(e, b, o, mt, nt);
  e.Close();
  e.Close();
  return absl::OkStatus();
}

// The threads that share output columns of a warp-dot product: `count` of
// them (a power of two), the columns' K split among them in turn; `first` is
// the expression for this thread's place among them. Each sums `columns`
// adjacent columns n .. n + columns - 1 (acc[m * columns + c]), reading A
// once for all of them.
struct ColumnLanes {
  std::string first;
  int64_t count = 32;
  int64_t columns = 1;
};

// Accumulator (m, c)'s name.
std::string AccOf(const ColumnLanes& lanes, int64_t m, const std::string& c) {
  return lanes.columns == 1 ? absl::StrCat("acc[", m, "]") : absl::StrCat("acc[", m * lanes.columns, " + ", c, "]");
}

// Opens `for (c ...)` over a thread's columns, with (where `clamped`) `nc`
// its column clamped into the matrix (a column past N is read but never
// stored); for one column no loop opens and the column is n. Close with
// CloseColumns.
void OpenColumns(Emitter& e, const ColumnLanes& lanes, bool clamped) {
  if (lanes.columns == 1) return;
  e.Line("#pragma unroll");
  e.Open(absl::StrCat("for (int c = 0; c < ", lanes.columns, "; ++c)"));
  if (clamped) e.Line("const i64 nc = n + c < N ? n + c : N - 1;");
}
void CloseColumns(Emitter& e, const ColumnLanes& lanes) {
  if (lanes.columns > 1) e.Close();
}

// `v`, read from a tensor stored as `stored`, rounded to the product's
// dtype where the two differ.
std::string ReadAs(DType stored, DType dtype, const std::string& v) {
  return stored == dtype ? v : absl::StrCat("round_", DTypeSuffix(dtype), "(", v, ")");
}

// Row m of A from k0 on, as `vectors` 16-byte loads into a<m>[] (`per`
// elements of `ea` bytes each) from the row's start a_row<m>.
void LoadAVectors(Emitter& e, int64_t m, int vectors, int slot, int per, int ea) {
  e.Linef("uint4 a", m, "[", vectors, "];");
  e.Linef("for (int q = 0; q < ", vectors, "; ++q) a", m, "[q] = load16_bits(p.t[", slot, "], a_row", m,
          " + k0 + q * ", per, ", ", ea, ");");
}

// Where B's column is contiguous along k (a weight stored [N, K], as
// linear layers keep it), each lane reads 16 bytes of it at once: a warp
// then has eight times the bytes in flight of one element per lane, which
// a decode step's products need to stream their weights near the copy
// bandwidth. The A rows are read as vectors too where they are contiguous
// along k and 16 bytes of them match the B vector's length. The vector
// loop runs where K is a multiple of the vector and every row starts
// 16-byte aligned (checked on the GPU); the scalar loop otherwise. Emits
// nothing (returns false) where B is not contiguous along k.
bool EmitVectorWarpDot(Emitter& e, const BlockGraph& b, const std::vector<std::string>& batch,
                       const ColumnLanes& lanes, const std::function<void()>& scalar_loop) {
  const ugraph::View& av = b.inputs[0].view;
  const ugraph::View& bv = b.inputs[1].view;
  const DType dtype = b.tiles.dtype;
  const int r = av.shape.rank();
  if (!IsFloating(dtype) || ContiguousDim(e.graph(), bv) != r - 2) return false;
  const DType b_stored = e.graph().tensors[bv.tensor].dtype;
  const DType a_stored = e.graph().tensors[av.tensor].dtype;
  const int eb = static_cast<int>(DTypeSize(b_stored)), ea = static_cast<int>(DTypeSize(a_stored));
  if (eb != 2 && eb != 4) return false;
  const int width = 16 / eb;  // elements per B vector
  // A vectors per B vector (0: A read element by element).
  const int a_vectors = ContiguousDim(e.graph(), av) == r - 1 && (ea == 2 || ea == 4) && width * ea % 16 == 0
                            ? width * ea / 16 : 0;
  const int64_t rows = b.tiles.m;
  const int bs = e.Slot(bv.tensor), as = e.Slot(av.tensor);
  const auto rounded = [&](DType stored, const std::string& v) { return ReadAs(stored, dtype, v); };
  std::string aligned = absl::StrCat("K % ", width, " == 0");
  if (lanes.columns == 1) {
    e.Linef("const i64 b_col = ", e.Offset(bv, With(batch, "0LL", "n")), ";");
    absl::StrAppend(&aligned, " && aligned16(p.t[", bs, "], b_col, ", eb, ")");
  } else {
    e.Linef("i64 b_col[", lanes.columns, "];");
    OpenColumns(e, lanes, /*clamped=*/true);
    e.Linef("b_col[c] = ", e.Offset(bv, With(batch, "0LL", "nc")), ";");
    CloseColumns(e, lanes);
    for (int64_t c = 0; c < lanes.columns; ++c) {
      absl::StrAppend(&aligned, " && aligned16(p.t[", bs, "], b_col[", c, "], ", eb, ")");
    }
  }
  if (a_vectors > 0) {
    for (int64_t m = 0; m < rows; ++m) {
      e.Linef("const i64 a_row", m, " = ", e.Offset(av, With(batch, absl::StrCat(m, "LL"), "0LL")), ";");
      absl::StrAppend(&aligned, " && aligned16(p.t[", as, "], a_row", m, ", ", ea, ")");
    }
  }
  e.Open(absl::StrCat("if (", aligned, ")"));
  e.Line("#pragma unroll 4");
  e.Open(absl::StrCat("for (i64 k0 = ", lanes.first, " * ", width, "; k0 < K; k0 += ", lanes.count * width, ")"));
  const int per = a_vectors > 0 ? 16 / ea : 0;
  const auto load_a = [&](int64_t m) { LoadAVectors(e, m, a_vectors, as, per, ea); };
  const auto a_value = [&](int64_t m) {
    return a_vectors > 0
               ? rounded(a_stored, absl::StrCat("bits_to_", DTypeSuffix(a_stored), "(vector_bits(a", m, "[j / ", per,
                                                "], j % ", per, ", ", ea, "))"))
               : rounded(a_stored, absl::StrCat("load_", DTypeSuffix(a_stored), "(p.t[", as, "], ",
                                                e.Offset(av, With(batch, absl::StrCat(m, "LL"), "k0 + j")), ")"));
  };
  // With several columns, A's vectors are loaded once, before the columns'.
  if (lanes.columns > 1 && a_vectors > 0) {
    for (int64_t m = 0; m < rows; ++m) load_a(m);
  }
  OpenColumns(e, lanes, /*clamped=*/false);
  e.Linef("const uint4 bv = load16_bits(p.t[", bs, "], ", lanes.columns == 1 ? "b_col" : "b_col[c]", " + k0, ", eb,
          ");");
  e.Linef("float bk[", width, "];");
  e.Linef("for (int j = 0; j < ", width, "; ++j) bk[j] = ",
          rounded(b_stored, absl::StrCat("bits_to_", DTypeSuffix(b_stored), "(vector_bits(bv, j, ", eb, "))")), ";");
  for (int64_t m = 0; m < rows; ++m) {
    if (lanes.columns == 1 && a_vectors > 0) load_a(m);
    const std::string acc = AccOf(lanes, m, "c");
    e.Linef("for (int j = 0; j < ", width, "; ++j) ", acc, " = fmaf(", a_value(m), ", bk[j], ", acc, ");");
  }
  CloseColumns(e, lanes);
  e.Close();
  e.Close();
  e.Open("else");
  scalar_loop();
  e.Close();
  return true;
}

// Where B's columns are rows of block-quantized weights (a QuantRead: the
// product reads them along K, lowering checks), each lane decodes eight
// consecutive values of the column at a time: they lie in one block (every
// format's blocks hold a multiple of 8 values; a row is whole blocks, so K
// is a multiple of 8 too), whose scales are read once for the eight. The
// decoded values are rounded as the dequantize op rounds them, then to the
// product's dtype; W is never stored unpacked. The A rows are read 16 bytes
// at a time where they are contiguous along k and 16-byte aligned.
void EmitQuantWarpDot(Emitter& e, const BlockGraph& b, const std::vector<std::string>& batch,
                      const ColumnLanes& lanes) {
  const ugraph::View& av = b.inputs[0].view;
  const ugraph::View& bv = b.inputs[1].view;
  const ugraph::QuantRead& quant = *b.inputs[1].quant;
  const DType dtype = b.tiles.dtype;
  const DType a_stored = e.graph().tensors[av.tensor].dtype;
  const int ea = static_cast<int>(DTypeSize(a_stored));
  const int r = av.shape.rank();
  const int64_t rows = b.tiles.m;
  const int as = e.Slot(av.tensor);
  const auto row_bytes = [&](const std::string& column) {
    std::vector<std::string> first_value = e.Invert(bv, With(batch, "0LL", column));
    first_value.back() = "0LL";
    return BlockBytes(e, bv.tensor, e.TensorOffset(bv.tensor, first_value));
  };
  if (lanes.columns == 1) {
    e.Linef("const unsigned char* b_row = ", row_bytes("n"), ";");
  } else {
    e.Linef("const unsigned char* b_rows[", lanes.columns, "];");
    OpenColumns(e, lanes, /*clamped=*/true);
    e.Linef("b_rows[c] = ", row_bytes("nc"), ";");
    CloseColumns(e, lanes);
  }
  // The decoded dtype is the product's (matmul's operands share one).
  const std::string decoded = RoundedTo(quant.dtype, "bk[j]");
  const auto a_value = [&](const std::string& v) { return ReadAs(a_stored, dtype, v); };
  // One pass over K; `vector_a`: A's eight values in 16-byte loads.
  const auto loop = [&](bool vector_a) {
    e.Line("#pragma unroll 2");
    e.Open(absl::StrCat("for (i64 k0 = ", lanes.first, " * 8; k0 < K; k0 += ", lanes.count * 8, ")"));
    const int per = 16 / ea, vectors = 8 / per;
    const auto load_a = [&](int64_t m) { LoadAVectors(e, m, vectors, as, per, ea); };
    if (lanes.columns > 1 && vector_a) {
      for (int64_t m = 0; m < rows; ++m) load_a(m);
    }
    OpenColumns(e, lanes, /*clamped=*/false);
    e.Line("float bk[8];");
    e.Linef("dequant8_", QuantDecoderName(quant.format), "(", lanes.columns == 1 ? "b_row" : "b_rows[c]",
            ", k0, bk);");
    if (decoded != "bk[j]") e.Linef("for (int j = 0; j < 8; ++j) bk[j] = ", decoded, ";");
    for (int64_t m = 0; m < rows; ++m) {
      const std::string acc = AccOf(lanes, m, "c");
      if (vector_a) {
        if (lanes.columns == 1) load_a(m);
        e.Linef("for (int j = 0; j < 8; ++j) ", acc, " = fmaf(",
                a_value(absl::StrCat("bits_to_", DTypeSuffix(a_stored), "(vector_bits(a", m, "[j / ", per, "], j % ",
                                     per, ", ", ea, "))")),
                ", bk[j], ", acc, ");");
      } else {
        // The offset's index arithmetic goes inside the loop over j.
        e.Open("for (int j = 0; j < 8; ++j)");
        e.Linef(acc, " = fmaf(",
                a_value(absl::StrCat("load_", DTypeSuffix(a_stored), "(p.t[", as, "], ",
                                     e.Offset(av, With(batch, absl::StrCat(m, "LL"), "k0 + j")), ")")),
                ", bk[j], ", acc, ");");
        e.Close();
      }
    }
    CloseColumns(e, lanes);
    e.Close();
  };
  if (ContiguousDim(e.graph(), av) != r - 1 || (ea != 2 && ea != 4)) {
    loop(false);
    return;
  }
  std::string aligned;
  for (int64_t m = 0; m < rows; ++m) {
    e.Linef("const i64 a_row", m, " = ", e.Offset(av, With(batch, absl::StrCat(m, "LL"), "0LL")), ";");
    absl::StrAppend(&aligned, m > 0 ? " && " : "", "aligned16(p.t[", as, "], a_row", m, ", ", ea, ")");
  }
  e.Open(absl::StrCat("if (", aligned, ")"));
  loop(true);
  e.Close();
  e.Open("else");
  loop(false);
  e.Close();
}

absl::Status GenerateWarpDot(Emitter& e, const BlockGraph& b) {
  // `per_block` columns a block, `columns` of them summed by each thread; a
  // group of threads shares their K: lanes within a warp (short K), or
  // `split` whole warps whose sums meet in shared memory.
  const int64_t rows = b.tiles.m, per_block = b.tiles.n, columns = b.tiles.k;
  const int64_t groups = columns > 0 && per_block % columns == 0 ? per_block / columns : 0;
  const int64_t per_column = groups > 0 ? b.threads / groups : 0;
  const bool power_of_two = per_column > 0 && (per_column & (per_column - 1)) == 0;
  const int64_t split = per_column / 32;
  if (groups < 1 || b.threads != per_column * groups || !power_of_two || split > 8 || rows < 1 || rows > 8 ||
      rows * columns > 32) {
    return absl::UnimplementedError(
        "codegen: warp-dot matmul needs a power of two of lanes per column group (at most 8 warps), 1-8 rows and "
        "at most 32 sums a thread");
  }
  const int64_t sums = rows * columns;  // accumulators a thread
  const ugraph::View& av = b.inputs[0].view;
  const ugraph::View& bv = b.inputs[1].view;
  const DType dtype = b.tiles.dtype;
  const bool is_float = IsFloating(dtype);
  const std::string ct = is_float ? "float" : "i64";
  // An operand stored wider than the product's dtype is rounded to it.
  const auto read = [&](const ugraph::View& view, const std::vector<std::string>& coords) {
    const DType stored = e.graph().tensors[view.tensor].dtype;
    const std::string load = absl::StrCat("load_", DTypeSuffix(stored), "(p.t[", e.Slot(view.tensor),
                                          "], ", e.Offset(view, coords), ")");
    return is_float ? ReadAs(stored, dtype, load) : load;
  };
  const Shape& a = av.shape;
  const int r = a.rank();
  const Shape batch_shape(a.dims().subspan(0, r - 2));
  e.Linef("const i64 M = ", e.DimExpr(a[r - 2]), ", N = ", e.DimExpr(bv.shape[r - 1]), ", K = ",
          e.DimExpr(a[r - 1]), ";");
  e.Linef("const i64 batches = ", e.NumelExpr(batch_shape), ";");
  e.Line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  ColumnLanes lanes;
  if (split > 1) {
    e.Linef("const int col = warp / ", split, ", part = warp % ", split, ";");
    e.Linef("__shared__ ", ct, " split_sums[", sums, "][", groups * split, "];");
    lanes = {"(lane + 32 * part)", per_column, columns};
  } else if (split == 1) {
    e.Line("const int col = warp;");
    lanes = {"lane", 32, columns};
  } else {
    e.Linef("const int col = warp * ", 32 / per_column, " + lane / ", per_column, ", part = lane % ", per_column,
            ";");
    lanes = {"part", per_column, columns};
  }
  e.Open("for (i64 bz = blockIdx.z; bz < batches; bz += gridDim.z)");
  const std::vector<std::string> batch = e.Unravel("bz", batch_shape);
  // The block's warps take their columns together (they meet at barriers).
  e.Open(absl::StrCat("for (i64 n0 = static_cast<i64>(blockIdx.x) * ", per_block,
                      "; n0 < N; n0 += static_cast<i64>(gridDim.x) * ", per_block, ")"));
  e.Line(columns == 1 ? "const i64 n = n0 + col;" : absl::StrCat("const i64 n = n0 + col * ", columns, ";"));
  e.Linef(ct, " acc[", sums, "];");
  e.Linef("for (int m = 0; m < ", sums, "; ++m) acc[m] = 0;");
  const auto scalar_loop = [&] {
    e.Line("#pragma unroll 4");
    e.Open(absl::StrCat("for (i64 k = ", split > 1 ? "lane + 32 * part" : lanes.first, "; k < K; k += ",
                        lanes.count, ")"));
    OpenColumns(e, lanes, /*clamped=*/true);
    e.Linef("const ", ct, " bk = ", read(bv, With(batch, "k", columns == 1 ? "n" : "nc")), ";");
    for (int64_t m = 0; m < rows; ++m) {
      const std::string row = absl::StrCat(m, "LL");
      const std::string acc = AccOf(lanes, m, "c");
      e.Linef(acc, " = ", is_float ? "fmaf(" : absl::StrCat("op_add(", acc, ", op_mul("),
              read(av, With(batch, row, "k")), ", bk", is_float ? absl::StrCat(", ", acc, ");") : "));");
    }
    CloseColumns(e, lanes);
    e.Close();
  };
  e.Open("if (n < N)");
  if (b.inputs[1].quant) {
    EmitQuantWarpDot(e, b, batch, lanes);
  } else if (!EmitVectorWarpDot(e, b, batch, lanes, scalar_loop)) {
    scalar_loop();
  }
  e.Close();
  if (split >= 1) {
    e.Linef("for (int m = 0; m < ", sums, "; ++m) acc[m] = warp_reduce<false>(acc[m]);");
  } else {
    e.Linef("for (int m = 0; m < ", sums, "; ++m) acc[m] = lanes_reduce<false, ", per_column, ">(acc[m]);");
  }
  if (split > 1) {
    e.Linef("if (lane == 0) for (int m = 0; m < ", sums, "; ++m) split_sums[m][warp] = acc[m];");
    e.Line("__syncthreads();");
    e.Linef("for (int m = 0; m < ", sums, "; ++m) {");
    e.Linef("  acc[m] = split_sums[m][col * ", split, "];");
    e.Linef("  for (int i = 1; i < ", split, "; ++i) acc[m] ", is_float ? "+= " : "= op_add(acc[m], ",
            "split_sums[m][col * ", split, " + i]", is_float ? ";" : ");");
    e.Line("}");
    e.Line("__syncthreads();");
  }
  e.Open(split > 1 ? "if (lane == 0 && part == 0)" : split == 1 ? "if (lane == 0)" : "if (part == 0)");
  Operands o;
  o.batch = batch;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < columns; ++c) {
      Epilogue(e, b, o, absl::StrCat(m, "LL"), columns == 1 ? "n" : absl::StrCat("(n + ", c, ")"),
               absl::StrCat("acc[", m * columns + c, "]"));
    }
  }
  e.Close();
  e.Close();
  e.Close();
  return absl::OkStatus();
}

}  // namespace

absl::Status GenerateMatmul(Emitter& e, const BlockGraph& b) {
  if (b.inputs[0].quant || (b.inputs[1].quant && !ugraph::DecodesQuantizedB(b))) {
    return absl::UnimplementedError(
        "codegen: the pipelined tensor-core product does not decode quantized blocks, nor any product its A operand");
  }
  switch (b.tiles.algorithm) {
    case ugraph::MatmulAlgorithm::kSimt:
      return GenerateSimt(e, b);
    case ugraph::MatmulAlgorithm::kTensorCore:
      return b.threads == 256 ? GeneratePipelinedMma(e, b) : GenerateMma(e, b);
    case ugraph::MatmulAlgorithm::kWarpDot:
      return GenerateWarpDot(e, b);
  }
  return absl::UnimplementedError("codegen: unknown matmul algorithm");
}

}  // namespace kiln::codegen
