// A tensor-core product whose A the loop reads unchanged at every step (a
// tile loaded or computed before the loop: MLA's t = q W_uk^T against each
// step's latent rows) takes A's fragments from a packed copy, not from the
// f32 tile. The f32 tile's rows lie a multiple of 32 floats apart, so the
// eight rows of a fragment read fall in one bank (8-way conflicts), and
// each fragment took four such reads and four roundings a k chunk and step.
// Packed once before the loop, [m16 slab][k chunk][lane], a lane's four
// words are one conflict-free 16-byte read. On an H100 the scores product
// of MLA's decode step (16 x 32 keys, depth 256) took ~2500 cycles a step
// from the f32 tile and ~800 from the fragments in registers; these reads
// are the same words. (FlashPlan::a_shared does the same for the flash
// path's Q.)
#include <algorithm>
#include <vector>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

void TiledGenerator::PlanPackedA() {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    MatmulPlan& plan = matmuls_[i];
    const int mm = static_cast<int>(i);
    if (!plan.mma || plan.a_ring || plan.shares_a_of >= 0 || mm == flash_.scores || mm == flash_.pv) continue;
    const int a = b_.tile_ops[i].args[0];
    if (phase_[i] != Phase::kLoop || phase_[a] != Phase::kBefore) continue;
    // The k range its masks read is known before the loop.
    if (RowAxis(BInput(mm)).source == TileAxis::Source::kLoop) continue;
    plan.a_packed = 0;  // placed by PlanLayout
  }
}

int64_t TiledGenerator::PackedAFloats(int i) const {
  const MatmulPlan& plan = matmuls_[i];
  return plan.a_packed < 0 ? 0 : plan.m16s * (plan.depth / 16) * 32 * 4;
}

void TiledGenerator::EmitPackFragments(int mm, int64_t offset) {
  const MatmulPlan& plan = matmuls_[mm];
  const int64_t chunks = plan.depth / 16, fragments = plan.m16s * chunks, warps = b_.threads / 32;
  e_.Open("");
  DeclareMmaLane();
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int i = 0; i < ", (fragments + warps - 1) / warps, "; ++i)"));
  e_.Linef("const int f = warp + i * ", warps, ";");
  if (fragments % warps != 0) e_.Linef("if (f >= ", fragments, ") break;");
  if (plan.m16s == 1) {
    e_.Line("const int m0 = 0, c = f;");
  } else {
    e_.Linef("const int m0 = f / ", chunks, " * 16, c = f % ", chunks, ";");
  }
  e_.Line("unsigned fa[4];");
  EmitMmaAFromTile(mm, "m0", "fa");
  e_.Linef("reinterpret_cast<uint4*>(smem + ", offset, ")[f * 32 + lane] = make_uint4(fa[0], fa[1], fa[2], fa[3]);");
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitPackedA() {
  bool any = false;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const MatmulPlan& plan = matmuls_[i];
    if (plan.a_packed < 0) continue;
    const int a = b_.tile_ops[i].args[0];
    Read(a, false);
    e_.Linef("// x", i, "'s A fragments (x", a, ", the same every step), packed: [m16 slab][k chunk][lane]");
    EmitPackFragments(static_cast<int>(i), plan.a_packed);
    any = true;
  }
  // Other warps' fragments: a barrier, or the one before the ring's
  // prologue (the f32 tile lies in the ring's space).
  if (any && !before_in_ring_space_) Sync();
}

// Q's words, [warp][slab][k chunk][lane] x 4 (FlashSharedAIndex), are its
// f16 (or bf16) pairs as loaded: a thread's 8 elements of row r from
// column c (a multiple of 8) are lanes (r % 8) * 4 + j's word (r / 8 % 2 +
// c / 8 % 2 * 2) of fragment (r / 16, c / 16), j = 0..3. Stored so, Q takes
// no f32 tile, no pack and no barrier of its own; on an H100 gqa_bs1's
// kernel took 7.64 -> 7.49 us (hand-edited), its output the same bits.
bool TiledGenerator::FlashAFromBits() const {
  if (flash_.pv < 0 || !flash_.a_shared || flash_.groups > 1 || flash_.cols_split || flash_.keys_split) return false;
  const MatmulPlan& s = matmuls_[flash_.scores];
  const int a = b_.tile_ops[flash_.scores].args[0];
  const InputPlan& q = inputs_[a];
  if (b_.tile_ops[a].kind != TileOp::Kind::kInput || q.ring || q.direct || q.width != 8) return false;
  if (q.dtype != b_.tile_ops[flash_.scores].dtype || DTypeSize(q.dtype) != 2 || FlashWarpsIdle()) return false;
  // Q's tile is [rows, depth] (axes of size 1 before them), every slab's
  // rows in it, its vectors along the depth.
  const std::vector<int64_t> sizes = Sizes(tiles_[a]);
  if (sizes.size() < 2 || q.vector_axis != static_cast<int>(sizes.size()) - 1) return false;
  if (sizes.back() != s.depth || s.depth % 16 != 0 || Product(sizes, 0, sizes.size() - 1) != 16 * s.m16s) return false;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const std::vector<int>& args = b_.tile_ops[i].args;
    if (static_cast<int>(i) != flash_.scores && std::find(args.begin(), args.end(), a) != args.end()) return false;
  }
  for (const ugraph::OutputSaver& o : b_.outputs) {
    if (o.value == a) return false;
  }
  return true;
}

void TiledGenerator::EmitFlashAFromBits(int i) {
  const int64_t depth = matmuls_[flash_.scores].depth;
  e_.Linef("// x", i, "'s words of x", flash_.scores, "'s A fragments, straight from the loaded bits (FlashAFromBits)");
  OpenThreadTasks(i, /*from_last=*/false);
  e_.Linef("const int at = ", RowMajor(Sizes(tiles_[i]), TaskCoords(i, "l")), ", r = at / ", depth, ", c = at % ",
           depth, ";");
  e_.Line("#pragma unroll");
  e_.Linef("for (int j = 0; j < 4; ++j) reinterpret_cast<unsigned*>(smem + ", flash_.a_offset, ")[((r / 16 * ",
           depth / 16, " + c / 16) * 32 + r % 8 * 4 + j) * 4 + r / 8 % 2 + c / 8 % 2 * 2] = vector_bits(", Raw(i),
           "[it], j, 4);");
  CloseThreadTasks(i);
}

void TiledGenerator::DeclareSharedRowsA(int a, int64_t chunks) {
  // Every warp holds the same rows: the warps pack the fragments once, a
  // share of the k chunks each, then each loads all of them. Read from the
  // f32 tile by every warp, at 8-way bank conflicts (its rows lie a multiple
  // of 32 floats apart), they took ~2100 cycles of MLA's middle kernel on
  // an H100 (4 warps, 16 chunks).
  e_.Linef("uint4* const qp = reinterpret_cast<uint4*>(smem + ", flash_.a_offset, ");  // x", a,
           "'s fragments packed: [k chunk][lane]");
  EmitPackFragments(flash_.scores, flash_.a_offset);
  Sync();
  e_.Open("");
  e_.Line("const int lane = threadIdx.x & 31;");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
  e_.Line("const uint4 q = qp[c * 32 + lane];");
  e_.Line("qa[0][c][0] = q.x, qa[0][c][1] = q.y, qa[0][c][2] = q.z, qa[0][c][3] = q.w;");
  e_.Close();
  e_.Close();
}

}  // namespace kiln::codegen::tiled_internal
