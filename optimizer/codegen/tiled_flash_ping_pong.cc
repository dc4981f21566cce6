// Two warpgroups half a step apart (FlashAttention-3's ping-pong between
// warpgroups), for the pipelined loop of whole steps (FlashPipelined, not
// FlashScoresAhead) with 8 warps of 16 rows each, nothing in the loop but
// the ring and the flash step, and a ring of 4 stages or more.
//
// Each warpgroup takes a loop of its own: warpgroup 0 the pipelined step;
// warpgroup 1 at step j the softmax of step j - 1 and then step j's
// products, which stay in flight across the next barrier. So after each
// barrier one group's products run while the other group's softmax does,
// where with both in step every softmax waited on both groups' products
// and the tensor cores then idled. The barriers are reached from two
// places in the code (an unaligned barrier: sync_threads_unaligned). The
// ring runs stages - 3 steps ahead (RingAhead): warpgroup 1's products
// still read two stages when the barrier lets the copies into a third.
#include "absl/strings/str_cat.h"
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

bool TiledGenerator::FlashPingPong() const {
  if (!FlashPipelined() || FlashScoresAhead() || stages_ < 4 || b_.threads != 256) return false;
  const MatmulPlan& s = matmuls_[flash_.scores];
  if (s.m16s != 8 || s.b_scale >= 0 || DeferredScaleFold() >= 0) return false;
  // In the loop, the ring's inputs and the flash step alone: their one
  // barrier a step is the only one, the same in both warpgroups' loops.
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const int x = static_cast<int>(i);
    if (phase_[i] != Phase::kLoop || !needed_[i]) continue;
    const TileOp::Kind kind = b_.tile_ops[i].kind;
    const bool flash = x == flash_.scores || x == flash_.exp || x == flash_.pv || x == flash_.sum ||
                       (kind == TileOp::Kind::kAccumulate && FlashAccumulator(x));
    if (!flash && kind != TileOp::Kind::kConstant && !(kind == TileOp::Kind::kInput && inputs_[i].ring)) {
      return false;
    }
  }
  return true;
}

absl::Status TiledGenerator::EmitPingPongLoops(bool loop_axes) {
  // Warpgroup 0 takes the pipelined step; warpgroup 1 its first step's
  // products, then at each step the last one's softmax before its own
  // products, and after its loop the last step's softmax. Each iteration
  // of either loop meets the other's at its one barrier (the ring's).
  e_.Line("// whole steps in a loop for each warpgroup (FlashPingPong): warpgroup 1 half a step behind");
  unaligned_barriers_ = true;
  const auto step = [&](PingPong part) -> absl::Status {
    ping_pong_ = part;
    EmitLoopStep(loop_axes);
    ping_pong_ = PingPong::kOff;
    if (step_barriers_ != 1) {
      return absl::InternalError(absl::StrCat("codegen: a ping-pong flash loop's step has ", step_barriers_,
                                              " barriers; both warpgroups' loops need exactly one"));
    }
    return absl::OkStatus();
  };
  e_.Line("// warpgroup 0's loop, then warpgroup 1's (the index a broadcast: the same in every lane to ptxas)");
  e_.Open("if (__shfl_sync(0xffffffffu, threadIdx.x / 128, 0) == 0)");
  e_.Open("for (; step < lean_end; ++step)");
  if (absl::Status s = step(PingPong::kOff); !s.ok()) return s;
  e_.Close();
  e_.Close();
  e_.Open("else");
  e_.Linef("float sc[", flash_.warp_slabs, "][", FlashColumns(), "][4];  // a step's scores, in flight across its barrier");
  e_.Open("if (step < lean_end)");
  if (absl::Status s = step(PingPong::kIssue); !s.ok()) return s;
  e_.Line("++step;");
  e_.Close();
  e_.Open("for (; step < lean_end; ++step)");
  if (absl::Status s = step(PingPong::kFinishThenIssue); !s.ok()) return s;
  e_.Close();
  e_.Open("if (lean_end > step_begin)");
  ping_pong_ = PingPong::kFinish;
  EmitFlashStep();
  ping_pong_ = PingPong::kOff;
  e_.Close();
  // Nothing in flight past here on any path, as ptxas sees them.
  EmitFlashWgmmaWait(flash_.scores, "sc");
  EmitFlashWgmmaWait(flash_.pv, absl::StrCat("o", flash_.pv));
  e_.Close();
  unaligned_barriers_ = false;
  return absl::OkStatus();
}

void TiledGenerator::EmitFlashPingPongStep() {
  const int64_t tile = b_.forloop.tile;
  if (ping_pong_ != PingPong::kIssue) {
    // The names k0, kn and stage stand for the step before's here.
    e_.Linef("// step - 1's softmax: its products were issued before this step's barrier, and ran under the ",
             "other warpgroup's softmax");
    e_.Open("");
    e_.Linef("const ", e_.Index(), " k0 = (step - 1) * ", tile, ";");
    e_.Linef("const int kn = ", tile, ";");
    e_.Linef("const int stage = static_cast<int>((step - 1 - step_begin) % ", stages_, ");");
    // Both products waited for (they ran under the other warpgroup's
    // softmax: done by now); waiting for the scores alone (wgmma_wait<1>),
    // ptxas serialized every product (C7518).
    EmitFlashWgmmaWait(flash_.scores, "sc");
    EmitFlashAfterScores(/*piped=*/true, /*ahead=*/false);
    e_.Close();
  }
  if (ping_pong_ == PingPong::kFinish) return;
  e_.Line("// this step's scores and the last one's P@V, left in flight across the next barrier");
  OpenFlashSlabs();
  e_.Linef("for (int v = 0; v < ", FlashColumns(), "; ++v) for (int h = 0; h < 4; ++h) sc[sl][v][h] = 0.0f;");
  e_.Close();
  EmitFlashScores("sc", /*wait=*/false, "stage");
  EmitFlashPreviousPv();
}

}  // namespace kiln::codegen::tiled_internal
