// Split loops (TiledGenerator): the blocks that share a grid point's loop
// steps write their partial accumulators, and their running maxes, to the
// device workspace and count themselves in; the last to count adds every
// block's partials, each brought to the largest max first (FlashDecoding's
// combine), and goes on to the ops after the loop.
// The last block's combine is the kernel's tail, one block on one SM, so
// it is a few passes of independent loads: one thread per row takes the
// blocks' maxes, their factors (into the flush scratch, once per block and
// row, not per element) and the sums with one value per row (the softmax's
// row sums); then the larger accumulators, 16 bytes a load. On an H100
// (gqa_bs1, 16 blocks a point) the factors once per row and the row sums in
// that pass took the tail from 7.8 to 6.3 us, and counting in by one
// acquire-release atomic, not a fence on each side of it, 0.4 us more.
//
// Even so, one SM reads every block's partials (gqa_bs1: 256 KiB) and
// stores the whole output tile while the others idle. Where the grid fits
// on the device at once, the executor launches it cooperatively (every
// block resident) and the blocks share the combine out instead
// (SplitShare): each waits for all of its point's blocks, then combines and
// stores its own rows, the same sums in the same order. On an H100,
// hand-timed: gqa_bs1's kernel 15.8 -> 11.9 us, gqa_bs8's 31.8 -> 30.0
// (the cooperative launch itself costs nothing measurable). A hand-written
// one-pass share (a thread per two elements: its row's maxes, factors and
// sums in registers, stored from there) ran 10.2 and 26.6; the generator's
// forms of it (each thread's own maxes, the row sums beside the first
// element of each row, the combine's loops unrolled, counting out after the
// stores) ran no faster than the passes here, and some slower. What did
// pay: the count out's atomic issued at the gather and its value read after
// the stores (split_count_out), its round trip under the combine (gqa_bs1's
// kernel 8.48 -> 7.90 us), and a flash loop's partials written from the
// warps' registers (FlashPartialsDirect, 7.90 -> 7.66). And where a
// point's rows are fewer than half of its many blocks (MLA's decode step:
// 16 rows, 64 blocks), runs of a row a block, lanes in groups a vector,
// their loads under the maxes' pass (EmitCombineLoop).
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

namespace {

// Where tile t has grid axis g (of size above 1), or -1.
int GridAxisIn(const TileInfo& t, int g) {
  for (size_t d = 0; d < t.axes.size(); ++d) {
    const TileAxis& a = t.axes[d];
    if (a.source == Source::kGrid && a.grid_axis == g && a.size > 1) return static_cast<int>(d);
  }
  return -1;
}

// Whether axis d of tile t is its outermost of size above 1.
bool Outermost(const TileInfo& t, int d) {
  for (int o = 0; o < d; ++o) {
    if (t.axes[o].size != 1) return false;
  }
  return d >= 0;
}

// The elements of tile t inside one index of its axis d: a row's, for the
// share's axis.
int64_t RowLength(const TileInfo& t, int d) { return Product(Sizes(t), d + 1, t.axes.size()); }

// A load of the partials at `at` (code), `width` floats (1 or 4).
std::string PartialLoad(const std::string& at, int width) {
  return width == 4 ? absl::StrCat("__ldcg(reinterpret_cast<const float4*>(", at, "))")
                    : absl::StrCat("__ldcg(", at, ")");
}

// The first element of a share from `lo` that lanes in groups of `group`
// take, `width` a vector.
std::string GroupFirst(const std::string& lo, int64_t group, int width) {
  return absl::StrCat(lo == "0" ? "" : lo + " + ", "threadIdx.x / ", group,
                      width == 1 ? "" : absl::StrCat(" * ", width));
}

// The element of a share from `lo` that a thread of a group of `span`
// threads (a run of warps, CombineAcrossWarps) takes, `width` a vector.
std::string SpanFirst(const std::string& lo, int64_t span, int width) {
  return absl::StrCat(lo == "0" ? "" : lo + " + ", "threadIdx.x % ", span,
                      width == 1 ? "" : absl::StrCat(" * ", width));
}

// The groups' sums `sums`[0..count) added pairwise into `sums`[0], index
// `h`: the one order both forms of a grouped combine add in (the last
// block's one thread, and the groups across warps), so that their outputs
// agree to the bit.
void EmitPairwiseTree(Emitter& e, const std::string& sums, const std::string& h, int64_t count,
                      const std::vector<std::string>& components) {
  e.Line("#pragma unroll");
  e.Open(absl::StrCat("for (int w = 1; w < ", count, "; w *= 2)"));
  e.Line("#pragma unroll");
  e.Open(absl::StrCat("for (int ", h, " = 0; ", h, " < ", count, "; ", h, " += 2 * w)"));
  for (const std::string& c : components) e.Linef(sums, "[", h, "]", c, " += ", sums, "[", h, " + w]", c, ";");
  e.Close();
  e.Close();
}

}  // namespace

void TiledGenerator::PlanSplitShare() {
  share_ = SplitShare{};
  const int split_axis = ugraph::SplitGridAxis(b_);
  if (split_axis < 0) return;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (phase_[i] != Phase::kAfter || !needed_[i]) continue;
    const TileOp::Kind kind = b_.tile_ops[i].kind;
    if (kind != TileOp::Kind::kUnary && kind != TileOp::Kind::kBinary && kind != TileOp::Kind::kConstant &&
        kind != TileOp::Kind::kInput && kind != TileOp::Kind::kRowMatmul) {
      return;
    }
  }
  std::vector<TileInfo> combined;  // what the combine writes
  std::vector<std::pair<TileInfo, TileInfo>> follows;  // a rescaled accumulator, its running max's rows
  for (const auto& [i, offset] : SplitAccumulators()) {
    combined.push_back(tiles_[i]);
    const int s = b_.tile_ops[i].rescale;
    if (s >= 0 && rescale_offsets_[s] >= 0) follows.emplace_back(tiles_[i], ShiftRowTile(s));
  }
  for (size_t s = 0; s < b_.tile_ops.size(); ++s) {
    if (rescale_offsets_[s] >= 0) combined.push_back(ShiftRowTile(static_cast<int>(s)));
  }
  // The grid axis of the largest tile size that every combined tile has
  // outermost, or not at all.
  for (int g = 0; g < 3; ++g) {
    if (g == split_axis) continue;
    int64_t size = 0;
    bool ok = true;
    for (const TileInfo& t : combined) {
      const int d = GridAxisIn(t, g);
      if (d < 0) continue;
      ok = ok && Outermost(t, d) && (size == 0 || size == t.axes[d].size);
      size = t.axes[d].size;
    }
    if (ok && size > std::max<int64_t>(1, share_.size)) share_ = SplitShare{g, size, 0, 1};
  }
  // A row product's rows must be the share's (each block multiplies the
  // rows it combined), and whole, but for one row product whose row's
  // blocks form a cluster (below).
  int row_products = 0, product = -1;
  for (size_t i = 0; share_.axis >= 0 && i < b_.tile_ops.size(); ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kRowMatmul || !needed_[i]) continue;
    ++row_products;
    product = static_cast<int>(i);
    if (ShareAxisOf(tiles_[b_.tile_ops[i].args[0]]) != 0) share_ = SplitShare{};
  }
  if (share_.axis < 0) return;
  share_.per = (share_.size + b_.loop_split - 1) / b_.loop_split;
  for (const auto& [i, offset] : SplitAccumulators()) {
    const int d = ShareAxisOf(tiles_[i]);
    if (d < 0 || SplitRowSum(i)) continue;  // row sums are added a row a thread
    const int64_t stride = RowLength(tiles_[i], d);
    const int64_t align = 4 / std::gcd<int64_t>(stride, 4);
    share_.per = (share_.per + align - 1) / align * align;
  }
  // An accumulator's factors come from its rows: a share of the rows is one
  // of the accumulator.
  for (const auto& [acc, rows] : follows) {
    if (ShareAxisOf(rows) >= 0 && ShareAxisOf(acc) < 0) share_ = SplitShare{};
  }
  if (share_.axis < 0 || share_.per != 1 || 2 * share_.size > b_.loop_split || b_.loop_split <= 16 ||
      row_products > 1) {
    return;
  }
  // Fewer rows than half the blocks, and many blocks (over 16: a row's
  // partials are many): a row's elements in `parts` runs, a block each
  // (every block of a row takes the row's maxes and sums). Each tile with
  // the axis splits evenly, in whole 16-byte runs where its rows are. On an
  // H100 MLA's decode step (16 rows of 256 floats, 64 blocks) combined in
  // 2.6 us a row a block (its 64 KiB of partials on one SM) and in 1.2 a
  // quarter row a block: 13.3 -> 11.8 us for the three kernels,
  // hand-edited.
  std::vector<int> ranged;  // the tiles read or written a share at a time
  for (const auto& [i, offset] : SplitAccumulators()) ranged.push_back(i);
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (phase_[i] == Phase::kAfter && !inputs_[i].at_use) ranged.push_back(static_cast<int>(i));
  }
  for (const ugraph::OutputSaver& o : b_.outputs) ranged.push_back(o.value);
  const auto even = [&](int64_t parts) {
    for (int i : ranged) {
      const int d = ShareAxisOf(tiles_[i]);
      if (d < 0) continue;
      const int64_t stride = RowLength(tiles_[i], d);
      if (stride > 1 && (stride % parts != 0 || (stride % 4 == 0 && stride / parts % 4 != 0))) return false;
    }
    return true;
  };
  // With a row product, a row's blocks are a thread block cluster along
  // the split axis (at most 8: the portable size), which its runs of k and
  // of the columns split evenly. On an H200, MLA's decode step (16 rows,
  // 64 blocks, W_uv after the combine) ran 8.35-8.50 us a whole row a block
  // (64 KiB of partials on each of 16 SMs, 48 blocks idle) and 7.81-7.89 a
  // quarter row a block in clusters of 4, hand-edited.
  // The product's rows are its tile's outermost axis, the share's: a
  // block's run of its columns, that run of its share (ShareRange).
  const auto clusters = [&](int64_t parts) {
    if (product < 0) return true;
    const TileOp& op = b_.tile_ops[product];
    const TileInfo& t = tiles_[product];
    const int64_t cols = tiles_[op.args[1]].axes[2].size;
    const int d = ShareAxisOf(t);
    return parts <= kMaxClusterBlocks && b_.loop_split % parts == 0 && row_products_[product].groups > 1 &&
           tiles_[op.args[0]].axes[1].size % parts == 0 && cols % parts == 0 && Outermost(t, d) &&
           RowLength(t, d) == cols;
  };
  for (int64_t parts = b_.loop_split / share_.size; parts > 1 && share_.parts == 1; --parts) {
    if (even(parts) && clusters(parts)) share_.parts = parts;
  }
  share_.cluster = product >= 0 && share_.parts > 1;  // else a whole row a block
}

bool TiledGenerator::CountOutAfterBarrier() const {
  // Thread 0, as it leaves split_gather, where a point has 16 blocks or
  // fewer; with more, the last warp's first thread after the barrier (see
  // EmitSplitCombine).
  return b_.loop_split > 16 && b_.threads > 32;
}

std::string TiledGenerator::CountOutThread() const {
  return absl::StrCat(CountOutAfterBarrier() ? b_.threads - 32 : 0);
}

int TiledGenerator::ShareAxisOf(const TileInfo& t) const {
  return share_.axis < 0 ? -1 : GridAxisIn(t, share_.axis);
}

bool TiledGenerator::ShareAligned(const TileInfo& t, int width) const {
  const int d = ShareAxisOf(t);
  if (d < 0) return true;
  const int64_t stride = RowLength(t, d);
  if (share_.parts > 1 && stride > 1) return stride % width == 0 && stride / share_.parts % width == 0;
  return share_.per * stride % width == 0;
}

std::pair<std::string, std::string> TiledGenerator::ShareRange(const TileInfo& t) const {
  const int d = ShareAxisOf(t);
  if (!Outermost(t, d)) return {"0", absl::StrCat(t.elements())};
  const int64_t stride = RowLength(t, d);
  if (share_.parts > 1 && stride > 1) {
    // A run of the block's row (none where the block has no row).
    const int64_t run = stride / share_.parts;
    const std::string lo = absl::StrCat("split_lo * ", stride, " + split_part * ", run);
    if (together_) return {lo, absl::StrCat(lo, " + (split_hi - split_lo) * ", run)};
    return {lo, absl::StrCat("split_hi * ", stride)};
  }
  if (stride == 1) return {"split_lo", "split_hi"};
  return {absl::StrCat("split_lo * ", stride), absl::StrCat("split_hi * ", stride)};
}

int64_t TiledGenerator::ShareElements(const TileInfo& t) const {
  const int d = ShareAxisOf(t);
  if (!Outermost(t, d)) return t.elements();
  const int64_t stride = RowLength(t, d);
  return share_.per * (stride > 1 ? stride / share_.parts : stride);
}

TiledGenerator::Spread TiledGenerator::ShareSpread(const TileInfo& t) const {
  const auto [lo, hi] = ShareRange(t);
  return lo == "0" && hi == absl::StrCat(t.elements()) ? Spread::kLinear : Spread::kShare;
}

void TiledGenerator::OpenShareLinear(const TileInfo& t, int width) {
  const auto [lo, hi] = ShareRange(t);
  const std::string first = absl::StrCat(lo == "0" ? "" : lo + " + ", "threadIdx.x",
                                         width == 1 ? "" : absl::StrCat(" * ", width));
  e_.Open(absl::StrCat("for (int l = ", first, "; l < ", hi, "; l += ", b_.threads * width, ")"));
}

void TiledGenerator::OpenShareRows(const TileInfo& t) {
  const auto [lo, hi] = ShareRange(t);
  e_.Open(absl::StrCat("for (int l = ", lo == "0" ? "" : lo + " + ", "threadIdx.x / 32; l < ", hi, "; l += ",
                       b_.threads / 32, ")"));
}

std::string TiledGenerator::ShareKeeps(const TileInfo& t, const std::vector<std::string>& coords) const {
  if (share_.axis < 0) return "";
  // Where a row's blocks share it out, the first of them stores what the
  // others would store again.
  const std::string first = share_.parts > 1 ? "split_part == 0" : "";
  const int d = ShareAxisOf(t);
  if (d < 0) return first.empty() ? "split_lo == 0" : "split_lo == 0 && " + first;
  if (Outermost(t, d)) {  // OpenShareLinear's range: all of the row's, or its run
    return RowLength(t, d) == 1 ? first : "";
  }
  return absl::StrCat(coords[d], " >= split_lo && ", coords[d], " < split_hi", first.empty() ? "" : " && ", first);
}

void TiledGenerator::EmitSplitPartials(const std::string& point, const std::string& split) {
  const int64_t floats = ugraph::SplitFloatsPerBlock(b_, tiles_);
  e_.Linef("const i64 point = ", point, ";");
  e_.Line("unsigned* const counters = p.counters;");
  e_.Linef("float* const partials = reinterpret_cast<float*>(p.ws) + point * ", b_.loop_split * floats, ";");
  e_.Linef("float* const mine = partials + (i64)", split, " * ", floats, ";");
}

bool TiledGenerator::FlashPartialsDirect() const {
  // P@V's accumulator, its row sums and the scores' running max, and
  // nothing else: the flush writes them where the copies would (on an H100,
  // gqa_bs1's kernel 7.90 -> 7.66 us, hand-edited: no pass through shared
  // memory and its barrier; 4 bytes a store ran 8.92).
  if (ugraph::SplitGridAxis(b_) < 0 || flash_.pv < 0 || flash_.keys_split) return false;
  if (ugraph::SplitFloatsPerBlock(b_, tiles_) % 2 != 0 || matmuls_[flash_.pv].cols % 2 != 0) return false;
  for (const auto& [i, offset] : SplitAccumulators()) {
    const bool sum = flash_.sum >= 0 && i == fused_into_[flash_.sum];
    if ((i != fused_into_[flash_.pv] || offset % 2 != 0) && !sum) return false;
  }
  for (size_t s = 0; s < b_.tile_ops.size(); ++s) {
    if (rescale_offsets_[s] >= 0 && static_cast<int>(s) != flash_.exp) return false;
  }
  return true;
}

std::string TiledGenerator::FlushTarget(int i) const {
  if (!FlashPartialsDirect()) return i < 0 ? absl::StrCat("shift", flash_.exp) : Buffer(i);
  int64_t offset = ugraph::RunningMaxOffset(b_, tiles_, flash_.exp);
  for (const auto& [a, at] : SplitAccumulators()) {
    if (a == i) offset = at;
  }
  return absl::StrCat("(mine + ", offset, ")");
}

void TiledGenerator::EmitSplitCombine(const std::string& point, const std::string& split) {
  const int64_t floats = ugraph::SplitFloatsPerBlock(b_, tiles_);
  const bool direct = FlashPartialsDirect();
  e_.Linef("// split loop: partial accumulators to the workspace", direct ? " (from the flush)" : "",
           "; the last of the ", b_.loop_split, " blocks of this grid point adds them in split order and goes on");
  if (!direct) EmitSplitPartials(point, split);
  const std::vector<std::pair<int, int64_t>> accumulators = SplitAccumulators();
  for (const auto& [i, offset] : direct ? std::vector<std::pair<int, int64_t>>{} : accumulators) {
    // 16 bytes a store where the partials and the tile allow (gqa_bs8's
    // kernel on an H100: 1480 -> 1110 cycles for its 16 KiB); a thread
    // then reads elements other threads wrote linearly.
    const int64_t elements = tiles_[i].elements();
    const bool vectors = elements % 4 == 0 && offset % 4 == 0 && floats % 4 == 0 && offsets_[i] % 4 == 0;
    Read(i, vectors ? Spread::kOther : Spread::kLinear);
    if (vectors) {
      e_.Open(absl::StrCat("for (int l = threadIdx.x * 4; l < ", elements, "; l += ", b_.threads * 4, ")"));
      e_.Linef("*reinterpret_cast<float4*>(mine + ", offset, " + l) = *reinterpret_cast<const float4*>(", Buffer(i),
               " + l);");
    } else {
      OpenLinear(elements);
      e_.Linef("mine[", offset, " + l] = ", Buffer(i), "[l];");
    }
    e_.Close();
  }
  if (!direct) EmitSplitShifts(split, floats, /*combine=*/false);
  EmitRowProductsAhead(split);
  // The barrier orders every thread's partials before thread 0's count,
  // whose release makes them visible to the block that counts last (its
  // acquire, then the barrier, order them before its reads). A point's
  // counters: the count in, and (split_leave) the count out.
  Sync();
  const std::string counter = absl::StrCat("counters + ", kSplitCounters, " * point");
  if (share_.axis >= 0) {
    e_.Line("unsigned counted_out = 0u;  // where every block goes on: its count out, read at the end "
            "(split_count_out)");
    // The count out: with many blocks (their atomics on one counter take
    // long), by the last warp after the barrier, as warp 0's loads of the
    // maxes queued behind it (on an H200, mla_decode 10.23/10.20 ->
    // 10.12/10.12 us); with few, by thread 0 as it leaves (gqa_bs1 7.47/7.47
    // against 7.56/7.52 from the last warp).
    e_.Linef("if (threadIdx.x == 0) split_last = together ? (split_gather(", counter, ", ", b_.loop_split, "u), ",
             CountOutAfterBarrier() ? "" : absl::StrCat("counted_out = split_leave(", counter, "), "),
             "true) : split_arrive(", counter, ") == ", b_.loop_split - 1, "u;");
  } else {
    e_.Linef("if (threadIdx.x == 0) split_last = split_arrive(", counter, ") == ", b_.loop_split - 1, "u;");
  }
  Sync();
  if (share_.axis >= 0 && CountOutAfterBarrier()) {
    e_.Linef("if (together && threadIdx.x == ", CountOutThread(), ") counted_out = split_leave(", counter,
             ");  // the last warp's: the first read the maxes");
  }
  e_.Open("if (split_last)");
}

void TiledGenerator::EmitSplitShare(const std::string& split) {
  const int64_t floats = ugraph::SplitFloatsPerBlock(b_, tiles_);
  const std::vector<std::pair<int, int64_t>> accumulators = SplitAccumulators();
  if (share_.axis >= 0 && together_) {
    const int64_t per = share_.per;
    e_.Linef("// the rows (grid axis ", share_.axis, "'s tile) this block combines and stores: its share",
             share_.parts > 1 ? ", a run of a row's elements" : "");
    if (share_.parts > 1) {
      e_.Linef("const int split_part = static_cast<int>(", split, ") % ", share_.parts, ";");
      e_.Linef("const int split_lo = min(", share_.size, ", static_cast<int>(", split, ") / ", share_.parts, " * ",
               per, ");");
    } else {
      e_.Linef("const int split_lo = min(", share_.size, ", static_cast<int>(", split, ") * ", per, ");");
    }
    e_.Linef("const int split_hi = min(", share_.size, ", split_lo + ", per, ");");
  } else if (share_.axis >= 0) {
    e_.Line("// every row: the last block alone combines and stores them");
    if (share_.parts > 1) e_.Line("const int split_part = 0;");
    e_.Linef("const int split_lo = 0, split_hi = ", share_.size, ";");
  }
  // Sums taken against running maxes are first brought to the max of the
  // blocks' (FlashDecoding's combine).
  for (const auto& [i, offset] : accumulators) {
    if (!SplitRowSum(i)) EmitCombineLoop(i, offset, floats, /*ahead=*/true);
  }
  EmitSplitShifts(split, floats, /*combine=*/true);
  for (const auto& [i, offset] : accumulators) {
    if (!SplitRowSum(i)) EmitCombineLoop(i, offset, floats, /*ahead=*/false);  // row sums: EmitSplitShifts
  }
  // Every block of the point has counted: the counter is free for the next
  // launch (where every block goes on, the last out frees both at the end
  // of its part: split_count_out, after the stores).
  if (!together_) e_.Linef("if (threadIdx.x == 0) counters[", kSplitCounters, " * point] = 0u;");
}

void TiledGenerator::EmitCombineAcrossWarps(int i, int64_t offset, int64_t floats, int width, int64_t group) {
  // Group g's threads (threads / group of them, a run of warps) each take a
  // vector of the share and every group-th block from g, loaded ahead
  // (EmitCombineLoop); their sums meet in the scratch, added in the last
  // block's tree order (EmitCombineVectors, one thread): the same sums, to
  // the bit. Lanes of one vector in one warp, added by shuffles, each load
  // read four blocks' partials where this reads one's: on an H200, MLA's
  // attention with W_uv in it, whole rows a block (64 KiB of partials
  // each), ran 8.31 us that way, 7.83 this way hand-edited and 7.67 as
  // generated.
  const char* lanes[] = {".x", ".y", ".z", ".w"};
  const int64_t span = b_.threads / group, per_lane = (b_.loop_split + group - 1) / group;
  const auto [lo, hi] = ShareRange(tiles_[i]);
  const std::string type = width == 4 ? "float4" : "float";
  const std::string sums = SplitFactors(static_cast<int>(b_.tile_ops.size()));  // after every factor
  e_.Open("");
  e_.Linef("const int g = threadIdx.x / ", span, ", l = ", SpanFirst(lo, span, width),
           ";  // the thread's blocks: g, g + ", group, ", ...");
  e_.Linef(type, " sum = ", width == 4 ? "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" : "0.0f", ";");
  e_.Open(absl::StrCat("if (l < ", hi, ")"));
  const std::vector<int64_t> sizes = Sizes(tiles_[i]);
  const std::vector<std::string> coords = Unravel(sizes, RowMajorOrder(sizes.size()), "l");
  const std::string factor = b_.tile_ops[i].rescale >= 0 ? absl::StrCat(" * f", i) : "";
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int k = 0; k < ", per_lane, "; ++k)"));
  e_.Linef("const int q = g + k * ", group, ";");
  if (b_.loop_split % group != 0) e_.Linef("if (q >= ", b_.loop_split, ") break;");
  if (!factor.empty()) e_.Linef("const float f", i, " = ", SplitFactor(i, coords), ";");
  if (width == 4) {
    for (const char* lane : lanes) e_.Linef("sum", lane, " += ahead", i, "[k]", lane, factor, ";");
  } else {
    e_.Linef("sum += ahead", i, "[k]", factor, ";");
  }
  e_.Close();
  e_.Close();
  e_.Linef("reinterpret_cast<", type, "*>(", sums, ")[threadIdx.x] = sum;");
  e_.Close();
  Sync();
  // An element a thread, as the share's elementwise passes take them
  // (OpenShareLinear): the pass after reads its own with no barrier. On an
  // H200, MLA's attention with W_uv in it (its sums 4 elements a thread of
  // the first 16, then a barrier, P C / l, a barrier) ran 8.06-8.14 us in
  // the lab, 7.90-8.02 so, hand-edited; with the stores' barrier after the
  // cluster's sums also gone (EmitRowMatmul), 8.04-8.14 -> 7.97-7.98 in
  // `kiln bench fused`.
  OpenShareLinear(tiles_[i], 1);
  e_.Linef("float s[", group, "];");
  e_.Line("#pragma unroll");
  e_.Linef("for (int h = 0; h < ", group, "; ++h) s[h] = ", sums, "[h * ", span * width, " + l",
           lo == "0" ? "" : absl::StrCat(" - (", lo, ")"), "];");
  EmitPairwiseTree(e_, "s", "h", group, {""});
  e_.Linef(Buffer(i), "[l] = s[0];");
  e_.Close();
}

int64_t TiledGenerator::CombineGroup(int i, int64_t offset, int64_t floats, int* width) const {
  *width = offset % 4 == 0 && floats % 4 == 0 && FourShareARow(i) && ShareAligned(tiles_[i], 4) ? 4 : 1;
  if (share_.axis < 0 || b_.loop_split <= 16) return 1;
  const int64_t vectors = (ShareElements(tiles_[i]) + *width - 1) / *width;
  int64_t group = 1;
  while (group < 16 && 2 * group <= b_.loop_split && 2 * group * vectors <= b_.threads) group *= 2;
  return group;
}

void TiledGenerator::EmitCombineLoop(int i, int64_t offset, int64_t floats, bool ahead) {
  // Each thread's loads of the blocks' partials are independent (the q
  // loop unrolled) and, where four consecutive elements share one row's
  // factor, 16 bytes wide: the combine is a few L2 round trips, not one per
  // element and block. Where the blocks are many (over 16) and a share has
  // few vectors, `group` threads take each vector, each every group-th
  // block, and add their sums (MLA's quarter rows: 16 vectors, 256 threads,
  // 64 blocks: 4 loads a thread where one alone would take 64): consecutive
  // lanes by shuffles, or, with their loads ahead, a group a run of warps,
  // through the scratch (CombineAcrossWarps). The last block alone (no
  // p.together) takes the same sums in one thread, in the same order: the
  // output does not depend on the launch. Where lanes are grouped, each has one vector at most and
  // its loads fit in registers, they are issued before the maxes' pass
  // (`ahead`), their round trip under its own. On an H100, MLA's middle
  // kernel (hand-edited) combined in 2.6 us a row a block and in 1.2 a
  // quarter row; its three kernels as generated ran 11.2 us without the
  // loads ahead, 11.0 with them, and 11.2 with them after the maxes' pass.
  // Whether accumulator j's lanes are grouped with their loads ahead (and,
  // together, their sums meet in the scratch: CombineAcrossWarps).
  const auto loads_ahead = [&](int j, int64_t group, int width) {
    const int64_t per_lane = (b_.loop_split + group - 1) / group;
    const int64_t vectors = (ShareElements(tiles_[j]) + width - 1) / width;
    return group > 1 && per_lane <= 16 && group * vectors <= b_.threads;
  };
  int width = 1;
  const int64_t group = CombineGroup(i, offset, floats, &width);
  const int64_t per_lane = (b_.loop_split + group - 1) / group;
  const bool early = loads_ahead(i, group, width);
  if (ahead) {
    if (!early || !together_) return;
    const auto [lo, hi] = ShareRange(tiles_[i]);
    // A group's lanes a warp's run of vectors (its loads whole lines of one
    // block's partials), the groups in turn (CombineAcrossWarps).
    const int64_t span = b_.threads / group;
    e_.Linef("// x", i, "'s partials, loaded under the maxes' pass: a vector a lane at most");
    e_.Linef(width == 4 ? "float4" : "float", " ahead", i, "[", per_lane, "];");
    e_.Linef("const int la", i, " = ", SpanFirst(lo, span, width), ";");
    e_.Open(absl::StrCat("if (la", i, " < ", hi, ")"));
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int k = 0; k < ", per_lane, "; ++k)"));
    e_.Linef("const int q = threadIdx.x / ", span, " + k * ", group, ";");
    const std::string at = absl::StrCat("partials + q * ", floats, " + ", offset, " + la", i);
    e_.Linef(b_.loop_split % group == 0 ? "" : absl::StrCat("if (q < ", b_.loop_split, ") "), "ahead", i,
             "[k] = ", PartialLoad(at, width), ";");
    e_.Close();
    e_.Close();
    return;
  }
  if (group == 1) {
    EmitCombineVectors(i, offset, floats, width, 1);
  } else if (!together_) {
    EmitCombineVectors(i, offset, floats, width, -group);  // the last block: one thread the group's lanes
  } else if (early) {
    // The scratch is free once an earlier accumulator's tree has read it.
    bool after_another = false;
    for (const auto& [j, at] : SplitAccumulators()) {
      if (j == i) break;
      int w = 1;
      const int64_t g = CombineGroup(j, at, floats, &w);
      after_another = after_another || (!SplitRowSum(j) && loads_ahead(j, g, w));
    }
    if (after_another) Sync();
    EmitCombineAcrossWarps(i, offset, floats, width, group);
    Wrote(i, ShareSpread(tiles_[i]));
    return;
  } else {
    EmitCombineVectors(i, offset, floats, width, group);
  }
  // Four elements a thread, a group's, or a share: not the linear loop's
  // (OpenLinear) mapping.
  Wrote(i, width == 1 && share_.axis < 0 ? Spread::kLinear : Spread::kOther);
}

void TiledGenerator::EmitCombineVectors(int i, int64_t offset, int64_t floats, int width, int64_t group) {
  // group < 0: one thread takes the -group lanes' sums.
  const char* lanes[] = {".x", ".y", ".z", ".w"};
  const std::vector<std::string> components = width == 4 ? std::vector<std::string>(lanes, lanes + 4)
                                                         : std::vector<std::string>{""};
  const int64_t groups = group < 0 ? -group : group;
  const bool lanes_apart = group > 1, one_thread = group < -1;
  if (!lanes_apart) {
    OpenShareLinear(tiles_[i], width);
  } else {
    const auto [lo, hi] = ShareRange(tiles_[i]);
    e_.Open(absl::StrCat("for (int l = ", GroupFirst(lo, group, width), "; l < ", hi, "; l += ",
                         b_.threads / group * width, ")"));
    e_.Linef("const int g = threadIdx.x % ", group, ";  // the lane's blocks: g, g + ", group, ", ...");
  }
  const std::vector<int64_t> sizes = Sizes(tiles_[i]);
  const std::string factor = b_.tile_ops[i].rescale >= 0 ? absl::StrCat(" * f", i) : "";
  const std::vector<std::string> coords = Unravel(sizes, RowMajorOrder(sizes.size()), "l");
  const std::string type = width == 4 ? "float4" : "float";
  const std::string zero = width == 4 ? "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" : "0.0f";
  if (one_thread) {
    e_.Linef(type, " sums[", groups, "];  // the lanes' sums: group g's in sums[g]");
    e_.Line("#pragma unroll");
    e_.Linef("for (int g = 0; g < ", groups, "; ++g) sums[g] = ", zero, ";");
  } else {
    e_.Linef(type, " sum = ", zero, ";");
  }
  // One thread's lanes: a lane's loads at a time in flight, not all of them.
  const int64_t per_lane = (b_.loop_split + groups - 1) / groups;
  e_.Linef("#pragma unroll", one_thread ? " 1" : per_lane > 16 ? " 16" : "");
  if (groups == 1) {
    e_.Open(absl::StrCat("for (int q = 0; q < ", b_.loop_split, "; ++q)"));
  } else {
    e_.Open(absl::StrCat("for (int k = 0; k < ", per_lane, "; ++k)"));
    if (one_thread) {
      e_.Line("#pragma unroll");
      e_.Open(absl::StrCat("for (int g = 0; g < ", groups, "; ++g)"));
    }
    e_.Linef("const int q = g + k * ", groups, ";");
    if (b_.loop_split % groups != 0) e_.Linef("if (q >= ", b_.loop_split, ") break;");
  }
  const std::string at = absl::StrCat("partials + q * ", floats, " + ", offset, " + l");
  if (!factor.empty()) e_.Linef("const float f", i, " = ", SplitFactor(i, coords), ";");
  const std::string sum = one_thread ? "sums[g]" : "sum";
  const std::string value = PartialLoad(at, width);
  if (width == 4) {
    e_.Linef("const float4 v = ", value, ";");
    for (const char* lane : lanes) e_.Linef(sum, lane, " += v", lane, factor, ";");
  } else {
    e_.Linef(sum, " += ", value, factor, ";");
  }
  if (one_thread) e_.Close();
  e_.Close();
  if (lanes_apart) {
    // A group's lanes take the same l: converged, each group its mask. The
    // sums meet in a pairwise tree.
    e_.Linef("const unsigned lanes = ((1u << ", group, ") - 1) << (threadIdx.x % 32 / ", group, " * ", group, ");");
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int w = 1; w < ", group, "; w *= 2)"));
    for (const std::string& c : components) e_.Linef("sum", c, " += __shfl_xor_sync(lanes, sum", c, ", w);");
    e_.Close();
    e_.Open("if (g == 0)");
  } else if (one_thread) {
    e_.Line("// the lanes' tree: lane 0's adds, in its order");
    EmitPairwiseTree(e_, "sums", "g", groups, components);
    e_.Linef("const ", type, " sum = sums[0];");
  }
  if (width == 4) {
    for (int k = 0; k < 4; ++k) e_.Linef(Buffer(i), "[l + ", k, "] = sum", lanes[k], ";");
  } else {
    e_.Linef(Buffer(i), "[l] = sum;");
  }
  if (lanes_apart) e_.Close();
  e_.Close();
}

void TiledGenerator::EmitSplitShifts(const std::string& split, int64_t floats, bool combine) {
  bool any = false;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (rescale_offsets_[i] < 0) continue;
    const int s = static_cast<int>(i);
    const int64_t offset = ugraph::RunningMaxOffset(b_, tiles_, s);
    const int64_t rows = ShiftRowTile(s).elements();
    if (!combine) {
      OpenLinear(rows);
      e_.Linef("mine[", offset, " + l] = shift", i, "[l];");
      e_.Close();
      any = true;
      continue;
    }
    std::vector<std::pair<int, int64_t>> sums;  // the accumulators with one value per row
    for (const auto& [a, at] : SplitAccumulators()) {
      if (b_.tile_ops[a].rescale == s && SplitRowSum(a)) sums.emplace_back(a, at);
    }
    if (WarpPerSplitRow(ShiftRowTile(s))) {
      EmitWarpSplitShift(s, floats, sums);
    } else {
      EmitThreadSplitShift(s, floats, sums);
    }
    any = true;
  }
  if (combine && any) Sync();  // the accumulators' sums read every row
}

bool TiledGenerator::WarpPerSplitRow(const TileInfo& rows) const {
  // The rows this block combines: its share's where every block goes on.
  int64_t count = rows.elements();
  const int d = ShareAxisOf(rows);
  if (d >= 0 && Outermost(rows, d)) count = share_.per * (count / rows.axes[d].size);
  // Many blocks a point: a thread per row would read 2 x loop_split values
  // one after another. (At 8 blocks, 16 rows a block and 8 warps, gqa_bs8's
  // kernel ran 26.8 us with a thread per row, 28.1 with a warp per row.)
  return b_.loop_split >= 32 && count <= 2 * (b_.threads / 32);
}

void TiledGenerator::EmitThreadSplitShift(int s, int64_t floats, const std::vector<std::pair<int, int64_t>>& sums) {
  const int64_t offset = ugraph::RunningMaxOffset(b_, tiles_, s), rows = ShiftRowTile(s).elements();
  OpenShareLinear(ShiftRowTile(s), 1);
  // A thread per row. The shift every block's sums are brought to: the max
  // of theirs; each block's factor to it, and the sums with one value per
  // row, in the same pass (the blocks' maxes read once, into registers).
  const std::string q_loop = absl::StrCat("for (int q = 0; q < ", b_.loop_split, "; ++q)");
  e_.Linef("float maxes[", b_.loop_split, "];");
  e_.Line("float m = no_shift();");
  e_.Line("#pragma unroll");
  e_.Linef(q_loop, " m = fmaxf(m, maxes[q] = __ldcg(partials + q * ", floats, " + ", offset, " + l));");
  e_.Linef("shift", s, "[l] = m;");
  for (const auto& [a, at] : sums) e_.Linef("float sum", a, " = 0.0f;");
  e_.Line("#pragma unroll");
  e_.Open(q_loop);
  e_.Line("const float f = split_factor(maxes[q], m);");
  e_.Linef(SplitFactors(s), "[q * ", rows, " + l] = f;");
  for (const auto& [a, at] : sums) e_.Linef("sum", a, " += __ldcg(partials + q * ", floats, " + ", at, " + l) * f;");
  e_.Close();
  for (const auto& [a, at] : sums) {
    e_.Linef(Buffer(a), "[l] = sum", a, ";");
    Wrote(a, share_.axis < 0 ? Spread::kLinear : Spread::kOther);
  }
  e_.Close();
}

void TiledGenerator::EmitWarpSplitShift(int s, int64_t floats, const std::vector<std::pair<int, int64_t>>& sums) {
  const int64_t offset = ugraph::RunningMaxOffset(b_, tiles_, s), rows = ShiftRowTile(s).elements();
  const int64_t per_lane = (b_.loop_split + 31) / 32;
  const bool ragged = b_.loop_split % 32 != 0;
  OpenShareRows(ShiftRowTile(s));
  // A warp per row, its lanes over the blocks: each lane's maxes, the
  // warp's max, each block's factor and the sums reduced across the warp.
  // On an H100 (MLA's decode step, 64 blocks, a row each) the combine's
  // first pass took 2.1 us less than a thread per row, which read the 128
  // values of its row one after another.
  // The sums are loaded with the maxes: one round trip to L2, not two.
  e_.Line("const int lane = threadIdx.x % 32;");
  e_.Linef("float maxes[", per_lane, "];");
  for (const auto& [a, at] : sums) e_.Linef("float parts", a, "[", per_lane, "];");
  e_.Line("float m = no_shift();");
  const std::string j_loop = absl::StrCat("for (int j = 0; j < ", per_lane, "; ++j)");
  e_.Line("#pragma unroll");
  e_.Open(j_loop);
  e_.Line("const int q = lane + 32 * j;");
  const std::string unless = ragged ? absl::StrCat("q >= ", b_.loop_split, " ? ") : "";
  e_.Linef("maxes[j] = ", unless, ragged ? "no_shift() : " : "", "__ldcg(partials + q * ", floats, " + ", offset,
           " + l);");
  for (const auto& [a, at] : sums) {
    e_.Linef("parts", a, "[j] = ", unless, ragged ? "0.0f : " : "", "__ldcg(partials + q * ", floats, " + ", at,
             " + l);");
  }
  e_.Line("m = fmaxf(m, maxes[j]);");
  e_.Close();
  e_.Line("m = warp_reduce<true>(m);");
  for (const auto& [a, at] : sums) e_.Linef("float sum", a, " = 0.0f;");
  e_.Line("#pragma unroll");
  e_.Open(j_loop);
  e_.Line("const int q = lane + 32 * j;");
  if (ragged) e_.Open(absl::StrCat("if (q < ", b_.loop_split, ")"));
  e_.Line("const float f = split_factor(maxes[j], m);");
  e_.Linef(SplitFactors(s), "[q * ", rows, " + l] = f;");
  for (const auto& [a, at] : sums) e_.Linef("sum", a, " += parts", a, "[j] * f;");
  if (ragged) e_.Close();
  e_.Close();
  for (const auto& [a, at] : sums) e_.Linef("sum", a, " = warp_reduce<false>(sum", a, ");");
  e_.Open("if (lane == 0)");
  e_.Linef("shift", s, "[l] = m;");
  for (const auto& [a, at] : sums) e_.Linef(Buffer(a), "[l] = sum", a, ";");
  e_.Close();
  for (const auto& [a, at] : sums) Wrote(a, Spread::kOther);
  e_.Close();
}

std::vector<std::pair<int, int64_t>> TiledGenerator::SplitAccumulators() const {
  std::vector<std::pair<int, int64_t>> out;
  int64_t offset = 0;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kAccumulate) continue;
    out.emplace_back(static_cast<int>(i), offset);
    offset += tiles_[i].padded_floats();
  }
  return out;
}

bool TiledGenerator::SplitRowSum(int acc) const {
  const int s = b_.tile_ops[acc].rescale;
  if (s < 0 || rescale_offsets_[s] < 0) return false;
  // Element l is row l: the tile's axes are the rows' (RowOf aligns them
  // with the tile's last ones), any before them of size 1.
  const std::vector<int64_t> sizes = Sizes(tiles_[acc]), rows = Sizes(ShiftRowTile(s));
  if (sizes.size() < rows.size()) return false;
  const size_t lead = sizes.size() - rows.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != (d < lead ? 1 : rows[d - lead])) return false;
  }
  return true;
}

std::string TiledGenerator::SplitFactors(int s) const {
  int64_t at = direct_scratch_;
  for (int i = 0; i < s; ++i) {
    if (rescale_offsets_[i] >= 0) at += b_.loop_split * ShiftRowTile(i).elements();
  }
  return absl::StrCat("(scratch + ", at, ")");
}

bool TiledGenerator::FourShareARow(int acc) const {
  const std::vector<int64_t> sizes = Sizes(tiles_[acc]);
  if (tiles_[acc].elements() % 4 != 0) return false;
  // The innermost axis that varies: four consecutive elements lie along it.
  int inner = static_cast<int>(sizes.size()) - 1;
  while (inner >= 0 && sizes[inner] == 1) --inner;
  if (inner < 0 || sizes[inner] % 4 != 0) return false;
  const int s = b_.tile_ops[acc].rescale;
  if (s < 0) return true;
  // RowOf aligns the rows' axes with the tile's last ones.
  const std::vector<int64_t> rows = Sizes(ShiftRowTile(s));
  const int lead = static_cast<int>(sizes.size() - rows.size());
  return inner < lead || rows[inner - lead] == 1;
}

std::string TiledGenerator::SplitFactor(int acc, const std::vector<std::string>& coords) const {
  const int s = b_.tile_ops[acc].rescale;
  return absl::StrCat(SplitFactors(s), "[q * ", ShiftRowTile(s).elements(), " + ", RowOf(s, tiles_[acc], coords), "]");
}

}  // namespace kiln::codegen::tiled_internal
