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

}  // namespace kiln::codegen::tiled_internal
