// Row products of graph-defined blocks (TileOp::kRowMatmul): each row of a
// tile times a matrix of its own, read from its tensor where it is used
// (never a tile: MLA's W_uv is 512 KiB, one head's 32). A row at a time,
// each thread dots its vector of columns down its group's share of k, the
// groups' sums meet by shuffles and through the scratch.
//
// Where a split loop's blocks share the combine out a row each, each thread
// loads its vectors of the block's row into registers before the blocks
// meet, so that their round trip runs under the meeting and the combine.
// That is MLA's decode step with W_uv applied in the attention's kernel
// (factor.h, FuseRowProduct): on an H200, hand-edited from the generated
// kernels, the step ran 10.17 us as three kernels and 7.96-8.05 as two,
// the attention alone 6.82 us with its quarter-row combine and 6.74 with
// whole rows and W_uv.
#include "absl/strings/str_join.h"
#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

namespace {

// Index k of run `part` (code; "": k whole) of a row product's k.
std::string RunK(const RowProductPlan& plan, const std::string& part, const std::string& k) {
  return part.empty() ? k : absl::StrCat("(", part, " * ", plan.run, " + ", k, ")");
}

}  // namespace

void TiledGenerator::PlanRowMatmul(int i) {
  const int w = b_.tile_ops[i].args[1];
  const TileInfo& wt = tiles_[w];
  const ugraph::View& view = b_.inputs[b_.tile_ops[w].input].view;
  const int64_t depth = wt.axes[1].size, cols = wt.axes[2].size;
  const int64_t width = 16 / static_cast<int64_t>(DTypeSize(e_.graph().tensors[view.tensor].dtype));
  RowProductPlan& plan = row_products_[i];
  const bool vectors = KeepsRuns(view) && ContiguousDim(e_.graph(), view) == 2 && cols % width == 0;
  plan.width = vectors ? width : 1;
  plan.vectors = cols / plan.width;
  plan.groups = std::max<int64_t>(1, b_.threads / plan.vectors);
  plan.run = depth;  // k whole, until a cluster shares it out (Plan)
  plan.per_thread = (depth + plan.groups - 1) / plan.groups;
  // Whole groups of columns a warp: the warp's groups add by shuffles.
  plan.shuffles = plan.groups > 1 && 32 % plan.vectors == 0;
  const int64_t parts = plan.groups == 1 ? 0 : plan.shuffles ? plan.groups * plan.vectors / 32 : plan.groups;
  plan.scratch = scratch_;
  scratch_ += parts * cols;
}

void TiledGenerator::EmitRowMatrixLoads(int i, const std::string& row, const std::string& raw,
                                        const std::string& part) {
  // Vector j at k = rg + j * groups (of run `part`'s k, where k is in
  // runs): a whole row of the matrix in range, its first vector aligned and
  // the step between them whole vectors, all load at once (one 16-byte load
  // each); else element by element.
  const RowProductPlan& plan = row_products_[i];
  const int w = b_.tile_ops[i].args[1];
  const ugraph::View& view = b_.inputs[b_.tile_ops[w].input].view;
  const DType dtype = e_.graph().tensors[view.tensor].dtype;
  const std::string ptr = InputPointer(w), load = absl::StrCat("load_bits_", DTypeSuffix(dtype));
  const size_t bytes = DTypeSize(dtype);
  const std::string col = plan.width == 1 ? "rv" : absl::StrCat("(rv * ", plan.width, ")");
  const std::string in_range = InRange(tiles_[w], {row, "rg", col});  // the row in its tensor (k and n are whole)
  const std::string first = e_.Fresh("rb"), step = e_.Fresh("rd");
  const auto k_at = [&](const std::string& k) { return RunK(plan, part, k); };
  e_.Linef("const ", e_.Index(), " ", first, " = ", InputOffset(w, {row, k_at("rg"), col}), ";");
  const std::string next = k_at(absl::StrCat("(rg + ", plan.groups, ")"));
  e_.Linef("const ", e_.Index(), " ", step, " = ", InputOffset(w, {row, next, col}), " - ", first, ";");
  const std::string k_in = absl::StrCat("rg + j * ", plan.groups, " < ", plan.run);
  const std::string zero = plan.width > 1 ? "make_uint4(0u, 0u, 0u, 0u)" : "0u";
  std::vector<std::string> whole;
  if (!in_range.empty()) whole.push_back(in_range);
  if (plan.width > 1) {
    whole.push_back(absl::StrCat("aligned16(", ptr, ", ", first, ", ", bytes, ")"));
    whole.push_back(absl::StrCat(step, " * ", bytes, " % 16 == 0"));
  }
  // Unrolled where the vectors are few enough for registers (a thread's
  // share of a long k, one group of all of it, is left a loop).
  const char* unroll = plan.per_thread <= 16 ? "#pragma unroll" : "#pragma unroll 1";
  e_.Open(absl::StrCat("if (", whole.empty() ? "true" : absl::StrJoin(whole, " && "), ")"));
  e_.Line(unroll);
  e_.Linef("for (int j = 0; j < ", plan.per_thread, "; ++j) ", raw, "[j] = ", k_in, " ? ",
           plan.width > 1 ? absl::StrCat("load16_bits(", ptr, ", ", first, " + j * ", step, ", ", bytes, ")")
                          : absl::StrCat(load, "(", ptr, ", ", first, " + j * ", step, ")"),
           " : ", zero, ";");
  e_.Close();
  e_.Open("else");
  e_.Line(unroll);
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_thread, "; ++j)"));
  e_.Linef(raw, "[j] = ", zero, ";");
  e_.Linef("const int k = rg + j * ", plan.groups, ";");
  if (plan.width == 1) {
    e_.Linef("if (", in_range.empty() ? "" : in_range + " && ", "k < ", plan.run, ") ", raw, "[j] = ", load, "(", ptr,
             ", ", InputOffset(w, {row, k_at("k"), col}), ");");
  } else {
    e_.Open(absl::StrCat("if (", in_range.empty() ? "" : in_range + " && ", "k < ", plan.run, ")"));
    e_.Line("#pragma unroll");
    e_.Linef("for (int c = 0; c < ", plan.width, "; ++c) set_vector_bits(", raw, "[j], c, ", load, "(", ptr, ", ",
             InputOffset(w, {row, k_at("k"), "(" + col + " + c)"}), "), ", bytes, ");");
    e_.Close();
  }
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitRowProductsAhead(const std::string& split) {
  for (size_t n = 0; n < b_.tile_ops.size(); ++n) {
    const int i = static_cast<int>(n);
    if (b_.tile_ops[i].kind != TileOp::Kind::kRowMatmul || !needed_[i] || !row_products_[i].ahead) continue;
    const RowProductPlan& plan = row_products_[i];
    e_.Linef("// x", i, "'s matrix at this block's row of the share (split_lo where every block goes on)",
             plan.parts > 1 ? " and its run of k (split_part)" : "", ", its loads under the blocks' meeting");
    e_.Linef(plan.width > 1 ? "uint4 " : "unsigned ", "rm", i, "[", plan.per_thread, "];");
    e_.Open("");
    const std::string row = plan.parts > 1 ? absl::StrCat(" / ", plan.parts) : absl::StrCat(" * ", share_.per);
    e_.Linef("const int r = min(", share_.size, ", static_cast<int>(", split, ")", row, "), rv = threadIdx.x % ",
             plan.vectors, ", rg = threadIdx.x / ", plan.vectors, ";");
    if (plan.parts > 1) e_.Linef("const int rp = static_cast<int>(", split, ") % ", plan.parts, ";");
    e_.Open(absl::StrCat("if (together && r < ", share_.size, " && rg < ", plan.groups, ")"));
    EmitRowMatrixLoads(i, "r", absl::StrCat("rm", i), plan.parts > 1 ? "rp" : "");
    e_.Close();
    e_.Close();
  }
}

void TiledGenerator::EmitRowMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const RowProductPlan& plan = row_products_[i];
  const int a = op.args[0], w = op.args[1];
  const TileInfo& at = tiles_[a];
  const int64_t rows = at.axes[0].size, depth = at.axes[1].size, cols = tiles_[w].axes[2].size;
  const ugraph::View& view = b_.inputs[b_.tile_ops[w].input].view;
  const DType wtype = e_.graph().tensors[view.tensor].dtype;
  Read(a, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ": a row at a time, each thread ", plan.width,
           " columns at every ", plan.groups, "-th k", plan.parts > 1 ? absl::StrCat(" of a run of ", plan.run) : "");
  // The rows this block computes: its share's (every block going on), or all.
  const bool shared = share_.axis >= 0 && ShareAxisOf(at) == 0;
  const std::string lo = shared ? "split_lo" : "0", hi = shared ? "split_hi" : absl::StrCat(rows);
  const std::string in_range = InRange(at, {"r", "0"});
  const std::string out_row = absl::StrCat(Buffer(i), "[r * ", cols, " + l]");
  // Row r's sums over run `part` of k (code; "": k whole) into the row of
  // x_i: its value, or where `after` (the last block's runs in turn) added
  // to the runs' before.
  const auto body = [&](bool from_registers, const std::string& part, bool after) {
    if (!in_range.empty()) e_.Open(absl::StrCat("if (", in_range, ")"));
    const int64_t tasks = plan.vectors * plan.groups;
    if (tasks > b_.threads) {
      e_.Open(absl::StrCat("for (int task = threadIdx.x; task < ", tasks, "; task += ", b_.threads, ")"));
    } else {
      e_.Open(absl::StrCat("if (threadIdx.x < ", tasks, ")"));
      e_.Line("const int task = threadIdx.x;");
    }
    e_.Linef("const int rv = task % ", plan.vectors, ", rg = task / ", plan.vectors, ";");
    const std::string raw = from_registers ? absl::StrCat("rm", i, "[j]") : "raw[j]";
    if (!from_registers) {
      e_.Linef(plan.width > 1 ? "uint4 " : "unsigned ", "raw[", plan.per_thread, "];");
      EmitRowMatrixLoads(i, "r", "raw", part);
    }
    e_.Linef("float acc[", plan.width, "] = {};");
    if (plan.per_thread <= 16) e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_thread, "; ++j)"));
    e_.Linef("const int k = rg + j * ", plan.groups, ";");
    e_.Open(absl::StrCat("if (k < ", plan.run, ")"));
    e_.Linef("const float x = ",
             RoundedTo(op.dtype, a, absl::StrCat(Buffer(a), "[r * ", depth, " + ", RunK(plan, part, "k"), "]")), ";");
    const std::string element =
        plan.width > 1 ? absl::StrCat("vector_bits(", raw, ", e, ", DTypeSize(wtype), ")") : raw;
    e_.Line("#pragma unroll");
    e_.Linef("for (int e = 0; e < ", plan.width, "; ++e) acc[e] = fmaf(x, ",
             RoundedTo(op.dtype, w, absl::StrCat("bits_to_", DTypeSuffix(wtype), "(", element, ")")), ", acc[e]);");
    e_.Close();
    e_.Close();
    if (plan.shuffles) {
      e_.Line("#pragma unroll");
      e_.Linef("for (int e = 0; e < ", plan.width, "; ++e) for (int s = ", plan.vectors,
               "; s < 32; s *= 2) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], s);");
    }
    // The sum of the thread's columns: the result where one group takes
    // all of k, else its part (a warp's, or a group's) in the scratch.
    const std::string sums = plan.groups == 1 ? absl::StrCat(Buffer(i), " + r * ", cols)
                             : plan.shuffles  ? absl::StrCat("scratch + ", plan.scratch, " + task / 32 * ", cols)
                                              : absl::StrCat("scratch + ", plan.scratch, " + rg * ", cols);
    e_.Linef(plan.shuffles ? absl::StrCat("if (task % 32 < ", plan.vectors, ") ") : "", "for (int e = 0; e < ",
             plan.width, "; ++e) (", sums, ")[rv * ", plan.width, " + e] = acc[e];");
    e_.Close();
    if (plan.groups > 1) {
      Sync();
      const int64_t parts = plan.shuffles ? plan.groups * plan.vectors / 32 : plan.groups;
      OpenLinear(cols);
      e_.Line("float s = 0.0f;");
      e_.Linef("for (int q = 0; q < ", parts, "; ++q) s += scratch[", plan.scratch, " + q * ", cols, " + l];");
      // A run's sums added to the runs' before as the cluster adds them
      // (its ranks' in order, below): from 0, in order.
      e_.Linef(out_row, " = ", after ? absl::StrCat("(", part, " == 0 ? 0.0f : ", out_row, ") + s") : "s", ";");
      e_.Close();
      Sync();  // the scratch is free again
    }
    if (!in_range.empty()) e_.Close();
  };
  const auto rows_loop = [&] { e_.Open(absl::StrCat("for (int r = ", lo, "; r < ", hi, "; ++r)")); };
  // Every block going on: its matrix's vectors in registers where loaded
  // ahead, and its run of k where its row's blocks are a cluster.
  if (together_ && (plan.ahead || plan.parts > 1)) {
    rows_loop();  // one row, or none
    body(/*from_registers=*/plan.ahead, plan.parts > 1 ? "split_part" : "", /*after=*/false);
    e_.Close();
    if (plan.parts > 1) {
      // Every block of the cluster has its run's sums of the row: each
      // adds up its run of the columns from all of theirs.
      e_.Line("cluster_arrive();  // the cluster's blocks: each its run of k's sums of the row");
      e_.Line("cluster_wait();");
      // The block's run of its row's columns (its share of x_i: the
      // stores after read their own sums with no barrier).
      OpenShareLinear(tiles_[i], 1);
      if (!in_range.empty()) {
        e_.Linef("const int r = l / ", cols, ";");
        e_.Open(absl::StrCat("if (", in_range, ")"));
      }
      e_.Line("float s = 0.0f;");
      e_.Line("#pragma unroll");
      e_.Linef("for (int q = 0; q < ", plan.parts, "; ++q) s += cluster_load(", Buffer(i), " + l, q);");
      e_.Linef(Buffer(i), "[l] = s;");
      if (!in_range.empty()) e_.Close();
      e_.Close();
      e_.Line("cluster_arrive();  // done with the others' sums (its wait: at the end of the block's part)");
      Wrote(i, ShareSpread(tiles_[i]));
      return;
    }
  } else {
    rows_loop();
    if (plan.parts > 1) e_.Open(absl::StrCat("for (int rp = 0; rp < ", plan.parts, "; ++rp)"));
    body(/*from_registers=*/false, plan.parts > 1 ? "rp" : "", /*after=*/plan.parts > 1);
    if (plan.parts > 1) e_.Close();
    e_.Close();
  }
  Wrote(i, Spread::kOther);
}

}  // namespace kiln::codegen::tiled_internal
