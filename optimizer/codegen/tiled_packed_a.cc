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

#include "optimizer/codegen/thread_emitter.h"
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
    Read(a, Spread::kOther);
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
// QK-norm's Q (RMSNorm: Q times a row's chain over its sum of squares) is
// normalized on the way, from the thread's 8 elements and the sums of its
// row's threads by shuffles: the generic prologue took five barriers and
// as many passes over shared memory (qknorm_gqa_bs1's kernel on an H100,
// hand-edited: 11.29 -> 9.41 us, the output the same).
namespace {

// Whether x is elementwise ops and constants over `leaf` alone, each of the
// ops of tile shape `shape` (no broadcast but of constants); its nodes
// into `chain`.
bool ChainOver(const std::vector<TileOp>& ops, const std::vector<TileInfo>& tiles, int x, int leaf,
               const std::vector<int64_t>& shape, std::vector<int>* chain) {
  if (x == leaf || ops[x].kind == TileOp::Kind::kConstant) return true;
  if (ops[x].kind != TileOp::Kind::kUnary && ops[x].kind != TileOp::Kind::kBinary) return false;
  if (Sizes(tiles[x]) != shape) return false;
  chain->push_back(x);
  for (int a : ops[x].args) {
    if (!ChainOver(ops, tiles, a, leaf, shape, chain)) return false;
  }
  return true;
}

}  // namespace

QFromBits TiledGenerator::FlashQFromBits() const {
  const QFromBits none;
  if (flash_.pv < 0 || flash_.keys_split) return none;
  // Packed for every warp's own rows (a_shared), or once for all the
  // warps where they share one slab (DeclareSharedRowsA's [k chunk][lane]).
  const bool per_warp_rows = flash_.a_shared && !flash_.cols_split;
  const bool shared_rows = flash_.cols_split && flash_.a_registers && flash_.warp_slabs == 1;
  if (!per_warp_rows && !shared_rows) return none;
  if (flash_.groups > 1 && flash_.warp_slabs != 1) return none;
  const std::vector<TileOp>& ops = b_.tile_ops;
  const MatmulPlan& s = matmuls_[flash_.scores];
  QFromBits found;
  found.q = ops[flash_.scores].args[0];
  std::vector<int> chain;  // the ops between Q and the scores' A, computed in registers
  if (ops[found.q].kind != TileOp::Kind::kInput) {
    // RMSNorm's: A = op(Q, r), r a row's chain over a sum along Q's depth
    // of a chain over Q.
    const TileOp& norm = ops[found.q];
    if (norm.kind != TileOp::Kind::kBinary) return none;
    chain.push_back(found.q);
    found.scale_first = ops[norm.args[0]].kind != TileOp::Kind::kInput;
    found.q = norm.args[found.scale_first ? 1 : 0];
    const int r = norm.args[found.scale_first ? 0 : 1];
    if (ops[found.q].kind != TileOp::Kind::kInput || !SameShape(found.q, ops[flash_.scores].args[0])) return none;
    std::vector<int64_t> rows = Sizes(tiles_[found.q]);
    rows.back() = 1;
    for (size_t i = 0; i < ops.size() && found.sum < 0; ++i) {
      std::vector<int> row_chain;
      if (ops[i].kind == TileOp::Kind::kReduceSum && ops[i].axis + 1 == static_cast<int>(rows.size()) &&
          Sizes(tiles_[i]) == rows && ChainOver(ops, tiles_, r, static_cast<int>(i), rows, &row_chain)) {
        found.sum = static_cast<int>(i);
        chain.insert(chain.end(), row_chain.begin(), row_chain.end());
      }
    }
    if (found.sum < 0) return none;
    chain.push_back(found.sum);
    if (!ChainOver(ops, tiles_, ops[found.sum].args[0], found.q, Sizes(tiles_[found.q]), &chain)) return none;
    found.scale = r;
  }
  const InputPlan& q = inputs_[found.q];
  if (q.ring || q.direct || q.width != 8 || q.dtype != ops[flash_.scores].dtype || DTypeSize(q.dtype) != 2) return none;
  if (FlashWarpsIdle()) return none;
  // Q's tile is [rows, depth] (axes of size 1 before them), every slab's
  // rows in it, its vectors along the depth; a row's threads (depth / 8)
  // consecutive lanes, every lane with a task (the norm's shuffles).
  const std::vector<int64_t> sizes = Sizes(tiles_[found.q]);
  if (sizes.size() < 2 || q.vector_axis != static_cast<int>(sizes.size()) - 1) return none;
  if (sizes.back() != s.depth || s.depth % 16 != 0 || Product(sizes, 0, sizes.size() - 1) != 16 * s.m16s) return none;
  const int64_t lanes = s.depth / 8;
  if (found.sum >= 0 && (lanes > 32 || 32 % lanes != 0 || q.tasks % b_.threads != 0 ||
                         q.order != RowMajorOrder(q.task_sizes.size()))) {
    return none;
  }
  // Nothing else reads Q or the chain.
  chain.push_back(found.q);
  const auto in_chain = [&](int x) { return std::find(chain.begin(), chain.end(), x) != chain.end(); };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (static_cast<int>(i) == flash_.scores || in_chain(static_cast<int>(i))) continue;
    for (int arg : ops[i].args) {
      if (in_chain(arg)) return none;
    }
  }
  for (const ugraph::OutputSaver& o : b_.outputs) {
    if (in_chain(o.value)) return none;
  }
  chain.pop_back();
  found.chain = chain;
  return found;
}

void TiledGenerator::EmitFlashQFromBits(int i) {
  const QFromBits found = FlashQFromBits();
  const int64_t depth = matmuls_[flash_.scores].depth;
  const TileOp& op = b_.tile_ops[flash_.scores];
  e_.Linef("// x", i, found.sum >= 0 ? absl::StrCat(" normalized (x", op.args[0], ") in registers, a row's ", depth / 8,
                                                    " threads' sums by shuffles,") : "",
           " straight to x", flash_.scores, "'s A fragments' words (FlashQFromBits)");
  OpenThreadTasks(i, /*from_last=*/false);
  e_.Linef("const int at = ", RowMajor(Sizes(tiles_[i]), TaskCoords(i, "l")), ", r = at / ", depth, ", c = at % ",
           depth, ";");
  e_.Line("unsigned w[4];");
  if (found.sum < 0) {
    e_.Linef("for (int j = 0; j < 4; ++j) w[j] = vector_bits(", Raw(i), "[it], j, 4);");
  } else {
    const std::string type = DTypeSuffix(inputs_[i].dtype);
    e_.Linef("float v[8], ss = 0.0f;");
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < 8; ++j) v[j] = bits_to_", type, "(vector_bits(", Raw(i), "[it], j, 2)), ss += ",
             ChainValue(b_.tile_ops[found.sum].args[0], "v[j]", i), ";");
    for (int64_t w = 1; w < depth / 8; w *= 2) e_.Linef("ss += __shfl_xor_sync(0xffffffffu, ss, ", w, ");");
    e_.Linef("const float rs = ", ChainValue(found.scale, "ss", found.sum), ";");
    const std::string f = OpFunction(b_.tile_ops[op.args[0]].op);
    const auto scaled = [&](const std::string& v) {
      return found.scale_first ? absl::StrCat(f, "(rs, ", v, ")") : absl::StrCat(f, "(", v, ", rs)");
    };
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < 4; ++j) w[j] = pack_", DTypeSuffix(op.dtype), "x2(", scaled("v[2 * j]"), ", ",
             scaled("v[2 * j + 1]"), ");");
  }
  // Each group of warps its own copy (one for all where they share the
  // slab's rows).
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < 4; ++j)"));
  for (int64_t g = 0; g < (flash_.cols_split ? 1 : flash_.groups); ++g) {
    const std::string warp = g == 0 ? "r / 16" : absl::StrCat("(", g * matmuls_[flash_.scores].m16s, " + r / 16)");
    e_.Linef("reinterpret_cast<unsigned*>(smem + ", flash_.a_offset, ")[((", warp, " * ", depth / 16,
             " + c / 16) * 32 + r % 8 * 4 + j) * 4 + r / 8 % 2 + c / 8 % 2 * 2] = w[j];");
  }
  e_.Close();
  CloseThreadTasks(i);
}

void TiledGenerator::DeclareSharedRowsA(int a, int64_t chunks, bool from_bits) {
  // Every warp holds the same rows: the warps pack the fragments once, a
  // share of the k chunks each, then each loads all of them. Read from the
  // f32 tile by every warp, at 8-way bank conflicts (its rows lie a multiple
  // of 32 floats apart), they took ~2100 cycles of MLA's middle kernel on
  // an H100 (4 warps, 16 chunks). Where Q's loaded bits went straight to
  // the packed words (FlashQFromBits; DeclareFlash's barrier since), there
  // is no f32 tile and nothing to pack.
  e_.Linef("uint4* const qp = reinterpret_cast<uint4*>(smem + ", flash_.a_offset, ");  // x", a,
           "'s fragments packed: [k chunk][lane]", from_bits ? ", stored as loaded" : "");
  if (!from_bits) {
    EmitPackFragments(flash_.scores, flash_.a_offset);
    Sync();
  }
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
