// Input tiles of graph-defined blocks: planned (coalesced 16-byte loads
// where the view allows, staged in registers where they fit), issued ahead
// (the next loop step's tiles while this one computes), converted to f32.
#include <algorithm>

#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/codegen/tiled_generator.h"
#include "tensor/check.h"

namespace kiln::codegen::tiled_internal {

bool KeepsRuns(const ugraph::View& view) {
  // The view only permutes, slices, adds or drops size-1 axes (an
  // unsqueeze), and expands by putting axes in front or broadcasting size-1
  // ones (a product's broadcast batch dims, grouped KV heads; ContiguousDim
  // says no axis when its own is broadcast). Other reshapes can break runs.
  Shape in = view.source_shape;
  for (const ugraph::ViewStep& s : view.steps) {
    bool broadcasts = s.kind == ugraph::ViewStep::Kind::kExpand && s.shape.rank() >= in.rank();
    for (int d = 0; broadcasts && d < in.rank(); ++d) {
      broadcasts = in[d] == Dim(1) || in[d] == s.shape[s.shape.rank() - in.rank() + d];
    }
    const bool unsqueezes = s.kind == ugraph::ViewStep::Kind::kReshape && ReshapesUnitAxesOnly(in, s.shape);
    if (!(s.kind == ugraph::ViewStep::Kind::kPermute || s.kind == ugraph::ViewStep::Kind::kSlice || broadcasts ||
          unsqueezes)) {
      return false;
    }
    in = s.shape;
  }
  return true;
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
  // 16-byte vectors along the last axis when it is surely unit-stride.
  const bool plain_view = KeepsRuns(view);
  const int64_t width = 16 / static_cast<int64_t>(DTypeSize(plan.dtype));
  if (plain_view && rank > 0 && contiguous == rank - 1 && plan.task_sizes[rank - 1] % width == 0) {
    plan.vector_axis = rank - 1;
  } else if (plain_view && rank > 1 && contiguous == rank - 2 && plan.task_sizes[rank - 2] % width == 0) {
    plan.vector_axis = rank - 2;  // the tasks walk it fastest (plan.order)
    // Widened into a tile outside the loop (MLA's W_uk^T), the tasks walk
    // the tile's last axis fastest instead: a warp's lanes then write 32
    // adjacent columns of each row, not 4 columns of rows a multiple of 32
    // floats apart (8 lanes to a bank: 1.6 us of MLA's 34 on an H100). Each
    // lane's vector then takes half of a 32-byte sector, and the thread's
    // next one the other half. A loop tile keeps its loads coalesced.
    if (!tiles_[i].in_loop && plan.task_sizes[rank - 1] > 1) {
      plan.order.erase(std::find(plan.order.begin(), plan.order.end(), rank - 1));
      plan.order.push_back(rank - 1);
    }
  }
  if (plan.vector_axis >= 0) {
    plan.width = width;
    plan.task_sizes[plan.vector_axis] /= width;
  }
  plan.tasks = t.elements() / plan.width;
  plan.per_thread = (plan.tasks + b_.threads - 1) / b_.threads;
  const int64_t cost = plan.per_thread * (plan.width > 1 ? 4 : 1);
  plan.staged = cost <= *registers;
  if (plan.staged) *registers -= cost;
}

std::vector<std::string> TiledGenerator::TaskCoords(int i, const std::string& task, const std::string& it) {
  const InputPlan& plan = inputs_[i];
  std::vector<std::string> coords = Unravel(plan.task_sizes, plan.order, task, task == "l" ? thread_task_ : "", it);
  if (plan.width > 1) {
    const std::string first = e_.Fresh("i");
    e_.Linef("const int ", first, " = ", coords[plan.vector_axis], " * ", plan.width, ";");
    coords[plan.vector_axis] = first;
  }
  return coords;
}

void TiledGenerator::EmitIssue(int i, const std::string& task, const std::string& raw, const std::string& slot) {
  const InputPlan& plan = inputs_[i];
  const TileInfo& t = tiles_[i];
  const std::string ptr = InputPointer(i);
  const std::string load = absl::StrCat("load_bits_", DTypeSuffix(plan.dtype));
  const size_t bytes = DTypeSize(plan.dtype);
  const std::vector<std::string> coords = TaskCoords(i, task);
  const std::string off = e_.Fresh("off");
  e_.Linef("const ", e_.Index(), " ", off, " = ", InputOffset(i, coords), ";");
  if (plan.width == 1) {
    const std::string in_range = InRange(t, coords);
    e_.Linef(raw, " = ", in_range.empty() ? "" : absl::StrCat(in_range, " ? "), load, "(", ptr, ", ", off,
             ")", in_range.empty() ? "" : " : 0u", ";");
    return;
  }
  // The whole vector in range and aligned: one load; else element by element.
  const int va = plan.vector_axis;
  const std::string whole = WholeVector(i, coords);
  if (slot.empty()) e_.Linef(raw, " = make_uint4(0u, 0u, 0u, 0u);");
  e_.Open(absl::StrCat("if (", whole.empty() ? "" : whole + " && ", "aligned16(", ptr, ", ", off, ", ", bytes,
                       "))"));
  if (slot.empty()) {
    e_.Linef(raw, " = load16_bits(", ptr, ", ", off, ", ", bytes, ");");
  } else {
    e_.Linef("copy_async16(&", slot, ", ", ptr, ", ", off, ", ", bytes, ");");
  }
  e_.Close();
  e_.Open("else");
  // A vector cut by the tensor's end (or unaligned, or out of range): its
  // elements one by one, zeros past the end.
  if (!slot.empty()) e_.Linef("uint4 ", raw, " = make_uint4(0u, 0u, 0u, 0u);");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.width, "; ++j)"));
  std::vector<std::string> element = coords;
  element[va] = absl::StrCat("(", coords[va], " + j)");
  const std::string element_off = e_.Fresh("off");
  e_.Linef("const ", e_.Index(), " ", element_off, " = ", InputOffset(i, element), ";");
  const std::string in_range = InRange(t, element);
  e_.Linef(in_range.empty() ? "" : absl::StrCat("if (", in_range, ") "), "set_vector_bits(", raw, ", j, ", load,
           "(", ptr, ", ", element_off, "), ", bytes, ");");
  e_.Close();
  if (!slot.empty()) e_.Linef(slot, " = ", raw, ";");
  e_.Close();
}

std::string TiledGenerator::InputPointer(int i) const {
  return absl::StrCat("p.t[", e_.Slot(b_.inputs[b_.tile_ops[i].input].view.tensor), "]");
}

std::string TiledGenerator::InputOffset(int i, const std::vector<std::string>& coords) const {
  const TileInfo& t = tiles_[i];
  std::vector<std::string> g(coords.size());
  for (size_t d = 0; d < coords.size(); ++d) g[d] = Global(t.axes[d], coords[d]);
  return e_.Offset(b_.inputs[b_.tile_ops[i].input].view, g);  // plain arithmetic: fine out of range too
}

std::string TiledGenerator::WholeVector(int i, const std::vector<std::string>& coords) const {
  const InputPlan& plan = inputs_[i];
  const TileInfo& t = tiles_[i];
  const int va = plan.vector_axis;
  std::string whole = InRange(t, coords, va);
  const TileAxis& along = t.axes[va];
  if (along.source == Source::kGrid || along.source == Source::kLoop) {
    absl::StrAppend(&whole, whole.empty() ? "" : " && ", coords[va], " + ", plan.width, " <= ", Length(along));
  }
  return whole;
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
  // The vector's elements sit `stride` apart in the row-major tile.
  const std::vector<int64_t> sizes = Sizes(tiles_[i]);
  const int64_t stride = Product(sizes, plan.vector_axis + 1, sizes.size());
  e_.Line("#pragma unroll");
  if (stride == 1 && plan.width % 4 == 0 && sizes.back() % 4 == 0) {
    // Adjacent elements (16-byte aligned: the vector starts at a multiple
    // of its width in a row of a multiple of 4, in an aligned buffer), four
    // to a store: threads a vector apart each storing a float at a time hit
    // the same banks (8 ways for 8 f16 a vector).
    const auto element = [&](const std::string& j) {
      return absl::StrCat(widen, "(vector_bits(", raw, ", ", j, ", ", DTypeSize(plan.dtype), "))");
    };
    e_.Linef("for (int j = 0; j < ", plan.width, "; j += 4) *reinterpret_cast<float4*>(", Buffer(i), " + ", at,
             " + j) = make_float4(", element("j"), ", ", element("j + 1"), ", ", element("j + 2"), ", ",
             element("j + 3"), ");");
    return;
  }
  e_.Linef("for (int j = 0; j < ", plan.width, "; ++j) ", Buffer(i), "[", at, " + j", stride == 1 ? "" : absl::StrCat(" * ", stride),
           "] = ", widen, "(vector_bits(", raw, ", j, ", DTypeSize(plan.dtype), "));");
}

void TiledGenerator::EmitStaged(int i, bool issue) {
  const InputPlan& plan = inputs_[i];
  if (!issue && plan.ring && !plan.tile && !plan.direct) {
    e_.Linef("// x", i, ": read from the ring by its users (no tile)");
    return;
  }
  if (!issue && plan.direct && plan.ring) {
    e_.Linef("// x", i, ": the direct matmul reads this step's vectors from the ring");
    return;
  }
  if (!issue && plan.direct) {
    // A direct matmul reads this step's vectors; the next step's loads
    // go to raw.
    e_.Linef("// x", i, ": this step's vectors, for the direct matmul");
    e_.Linef("uint4 cur", i, "[", plan.per_thread, "];");
    e_.Line("#pragma unroll");
    e_.Linef("for (int it = 0; it < ", plan.per_thread, "; ++it) cur", i, "[it] = ", Raw(i), "[it];");
    return;
  }
  if (!issue && flash_.pv >= 0 && i == FlashQFromBits().q) {
    return EmitFlashQFromBits(i);
  }
  if (issue) {
    e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), ": issue ", plan.per_thread, " load(s) of ",
             plan.width, " ", DTypeName(plan.dtype), " per thread");
  } else {
    Read(i, Spread::kOther);
    e_.Linef("// x", i, ": widen the loaded bits into the tile");
  }
  // A ring input of few copies, read across threads after the step's
  // barrier, is copied by the block's last threads: the first ones also
  // run the step's sums over their own vectors (RMSNorm's sum of squares),
  // and every warp waits at the barrier for the slowest (rmsnorm_linear_bs1:
  // 20.55 -> 20.30-20.34 us on an H100).
  OpenThreadTasks(i, /*from_last=*/issue && CopiesFromLast(i));
  if (plan.ring) {
    issue ? EmitIssue(i, "l", "v", RingSlot(i, "issue_stage", "l")) : EmitConvert(i, "l", RingSlot(i, "stage", "l"));
  } else {
    const std::string raw = absl::StrCat(Raw(i), "[it]");
    issue ? EmitIssue(i, "l", raw) : EmitConvert(i, "l", raw);
  }
  CloseThreadTasks(i);
  if (!issue) Wrote(i, Spread::kOther);
}

bool TiledGenerator::CopiesFromLast(int i) const {
  return inputs_[i].ring && BarrierFirst() && 2 * inputs_[i].tasks <= b_.threads;
}

std::string TiledGenerator::ThreadTask(bool from_last) const {
  return from_last ? absl::StrCat("(", b_.threads - 1, "u - threadIdx.x)") : "threadIdx.x";
}

void TiledGenerator::OpenThreadTasks(int i, bool from_last) {
  const InputPlan& plan = inputs_[i];
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", plan.per_thread, "; ++it)"));
  thread_task_ = ThreadTask(from_last);
  e_.Linef("const int l = ", from_last ? absl::StrCat(b_.threads - 1, " - threadIdx.x") : "threadIdx.x", " + it * ",
           b_.threads, ";");
  if (plan.tasks % b_.threads != 0) e_.Open(absl::StrCat("if (l < ", plan.tasks, ")"));
}

void TiledGenerator::CloseThreadTasks(int i) {
  thread_task_.clear();
  if (inputs_[i].tasks % b_.threads != 0) e_.Close();
  e_.Close();
}

void TiledGenerator::DeclareRaw(int i) {
  e_.Linef(inputs_[i].width > 1 ? "uint4 " : "unsigned ", Raw(i), "[", inputs_[i].per_thread, "];");
}

void TiledGenerator::EmitDirect(int i) {
  const InputPlan& plan = inputs_[i];
  Read(i, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), ": ", plan.width, " ", DTypeName(plan.dtype),
           " per load");
  OpenLinear(plan.tasks);
  e_.Linef(plan.width > 1 ? "uint4" : "unsigned", " raw;");
  EmitIssue(i, "l", "raw");
  EmitConvert(i, "l", "raw");
  e_.Close();
  Wrote(i, Spread::kOther);
}


bool TiledGenerator::Prefetched(int i) const {
  return phase_[i] == Phase::kLoop && inputs_[i].staged && !inputs_[i].ring;
}

bool TiledGenerator::RegisterPrefetch() const {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (Prefetched(static_cast<int>(i))) return true;
  }
  return false;
}

void TiledGenerator::EmitPrefetch(bool first) {
  const size_t n = b_.tile_ops.size();
  if (!RegisterPrefetch()) return;
  loop_start_ = first ? "kf" : "k1";
  loop_length_ = first ? "kn0" : "kn1";
  // Past this block's last step every element is out of range: no loads.
  e_.Line(first ? "// the first step's loop tiles" : "// the next step's loop tiles, loaded while this step computes");
  EmitStepRange(loop_start_, loop_length_, first ? "step_begin" : "step + 1", /*guarded=*/true);
  for (size_t i = 0; i < n; ++i) {
    if (!Prefetched(static_cast<int>(i))) continue;
    if (first) DeclareRaw(static_cast<int>(i));
    EmitStaged(static_cast<int>(i), /*issue=*/true);
  }
  loop_start_ = "k0";
  loop_length_ = "kn";
}

void TiledGenerator::PlanRing(int64_t max_stages, int64_t ring_bytes, int64_t* loop_registers) {
  // Up to max_stages stages in ring_bytes, at least 2 stages or no ring.
  const auto eligible = [&](size_t i) {
    return b_.tile_ops[i].kind == TileOp::Kind::kInput && phase_[i] == Phase::kLoop && inputs_[i].width > 1;
  };
  // An input whose slots would hold what an earlier one's do reads that
  // ring: one copy of the data.
  int64_t step_bytes = 0;
  std::vector<std::vector<int64_t>> layouts(b_.tile_ops.size());
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (!eligible(i)) continue;
    layouts[i] = RingLayout(static_cast<int>(i));
    for (size_t j = 0; j < i && !layouts[i].empty(); ++j) {
      if (layouts[j] == layouts[i] && inputs_[j].ring_of < 0) {
        inputs_[i].ring_of = static_cast<int>(j);
        break;
      }
    }
    if (inputs_[i].ring_of < 0) step_bytes += 16 * inputs_[i].tasks;
  }
  if (step_bytes == 0 || ring_bytes / step_bytes < 2) {
    for (InputPlan& plan : inputs_) plan.ring_of = -1;  // no ring to share
    return;
  }
  stages_ = std::min(max_stages, ring_bytes / step_bytes);
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (!eligible(i)) continue;
    InputPlan& plan = inputs_[i];
    if (plan.staged) *loop_registers += 4 * plan.per_thread;  // no raw registers
    plan.staged = plan.ring = true;
  }
}

void TiledGenerator::EmitStepRange(const std::string& start, const std::string& length, const std::string& step,
                                   bool guarded) {
  const int64_t tile = b_.forloop.tile;
  const std::string extent = b_.forloop.extent.rank() == 1 ? e_.DimExpr(b_.forloop.extent[0]) : e_.IndexLiteral(0);
  const bool compound = step.find(' ') != std::string::npos;
  e_.Linef("const ", e_.Index(), " ", start, " = ", compound ? absl::StrCat("(", step, ")") : step, " * ", tile, ";");
  const std::string past_end = guarded ? absl::StrCat(step, " >= step_end ? ", e_.IndexLiteral(0), " : ") : "";
  e_.Linef("const int ", length, " = static_cast<int>(", past_end, extent, " - ", start, " < ", tile, " ? ", extent,
           " - ", start, " : ", tile, ");");
}

void TiledGenerator::EmitRingIssue(const std::string& step, const std::string& stage) {
  if (lean_step_) {
    // A whole step copying a whole one: the whole copies alone. Where the
    // loop of whole steps runs to the block's end (FlashScoresAhead:
    // Generate), past the block's last step that step again, into a stage
    // no step reads.
    const std::string from = FlashScoresAhead() ? absl::StrCat("min(", step, ", step_end - 1)") : step;
    e_.Linef("const ", e_.Index(), " kr = (", from, ") * ", b_.forloop.tile, ";");
    e_.Linef("const int issue_stage = ", stage, ";");
    loop_start_ = "kr";
    for (const int i : RingOwners()) EmitWholeCopies(i);
    loop_start_ = "k0";
    e_.Line("copy_async_commit();");
    return;
  }
  EmitStepRange("kr", "knr", step, /*guarded=*/true);
  e_.Linef("const int issue_stage = ", stage, ";");
  loop_start_ = "kr";
  loop_length_ = "knr";
  // A whole step where every copy of this thread is a whole aligned
  // vector in range (ring_whole): the copies without their checks. Else
  // the checked ones; steps past this block's last are never read: no
  // copies (an empty group).
  e_.Open(absl::StrCat("if (ring_whole && knr == ", b_.forloop.tile, ")"));
  for (const int i : RingOwners()) EmitWholeCopies(i);
  e_.Close();
  e_.Open("else if (knr > 0)");
  for (const int i : RingOwners()) EmitStaged(i, /*issue=*/true);
  e_.Close();
  loop_start_ = "k0";
  loop_length_ = "kn";
  e_.Line("copy_async_commit();");
}

std::vector<int> TiledGenerator::RingOwners() const {
  std::vector<int> owners;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (inputs_[i].ring && inputs_[i].ring_of < 0) owners.push_back(static_cast<int>(i));
  }
  return owners;
}

void TiledGenerator::EmitWholeCopies(int i, bool prefetch) {
  const InputPlan& plan = inputs_[i];
  e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), ": ", plan.per_thread,
           prefetch ? " L2 prefetches of whole copies of " : " whole copies of ", plan.width, " ",
           DTypeName(plan.dtype), " per thread");
  const bool from_last = CopiesFromLast(i);
  const ugraph::View& view = b_.inputs[b_.tile_ops[i].input].view;
  bool reshaped = false;
  for (const ugraph::ViewStep& step : view.steps) {
    reshaped = reshaped || step.kind == ugraph::ViewStep::Kind::kReshape;
  }
  // Where the thread's copies lie a constant apart: the first one's offset
  // once a step, each copy that plus a multiple of the distance (an
  // immediate where the strides are constants). Worked out per copy, each
  // took 6-7 instructions of 64-bit arithmetic a loop step.
  std::string first, apart;
  int axis = -1;
  int64_t per_it = 0;
  if (plan.per_thread > 1 && !reshaped && TaskStep(plan.task_sizes, plan.order, &axis, &per_it)) {
    std::vector<std::string> zero(plan.task_sizes.size(), "0"), next = zero;
    next[axis] = absl::StrCat(per_it * (axis == plan.vector_axis ? plan.width : 1));
    thread_task_ = ThreadTask(from_last);
    first = e_.Fresh("rb");
    apart = e_.Fresh("rd");
    e_.Linef("const ", e_.Index(), " ", first, " = ", InputOffset(i, TaskCoords(i, "l", "0")),
             ";  // the thread's first copy");
    e_.Linef("const ", e_.Index(), " ", apart, " = ", e_.Offset(view, next), " - (", e_.Offset(view, zero),
             ");  // how far apart its copies lie");
  }
  // Their slots too, where the swizzle is the same for all of them (it
  // takes bits of the task that a multiple of the threads leaves alone).
  std::string slot0;
  if (!prefetch && !first.empty() && (!plan.swizzle || b_.threads % (8 * plan.row_vectors()) == 0)) {
    slot0 = e_.Fresh("ws");
    e_.Linef("const int ", slot0, " = ", SlotIndex(i, absl::StrCat("static_cast<int>(", ThreadTask(from_last), ")")),
             ";  // the first copy's slot");
  }
  OpenThreadTasks(i, from_last);
  const std::string offset =
      first.empty() ? InputOffset(i, TaskCoords(i, "l")) : absl::StrCat(first, " + it * ", apart);
  if (prefetch) {
    e_.Linef("prefetch_l2(", InputPointer(i), ", ", offset, ", ", DTypeSize(plan.dtype), ");");
    CloseThreadTasks(i);
    return;
  }
  // (Tasks a multiple of 8 rows apart: their slots are that many rows apart.)
  const int64_t slot_step = plan.swizzle ? b_.threads / plan.row_vectors() * plan.row_stride() : b_.threads;
  const std::string slot = slot0.empty() ? RingSlot(i, "issue_stage", "l")
                                         : absl::StrCat("ring", i, "[issue_stage * ", plan.tasks, " + ", slot0,
                                                        " + it * ", slot_step, "]");
  e_.Linef("copy_async16(&", slot, ", ", InputPointer(i), ", ", offset, ", ", DTypeSize(plan.dtype), ");");
  CloseThreadTasks(i);
}

void TiledGenerator::EmitRingWhole() {
  // At a whole step every loop coordinate is in range, so what decides is
  // the thread's other coordinates and the alignment, the same at every
  // step where it holds at the first two (the offsets are linear in the
  // loop coordinate).
  const std::string tile = e_.IndexLiteral(b_.forloop.tile);
  e_.Line("// whether each of this thread's ring copies is a whole aligned vector in range at every whole step");
  e_.Line("bool ring_whole = true;");
  loop_length_ = tile;
  for (const int i : RingOwners()) {
    OpenThreadTasks(i, CopiesFromLast(i));
    const std::vector<std::string> coords = TaskCoords(i, "l");
    const std::string whole = WholeVector(i, coords);
    const std::string bytes = absl::StrCat(DTypeSize(inputs_[i].dtype));
    loop_start_ = e_.IndexLiteral(0);
    const std::string first = InputOffset(i, coords);
    loop_start_ = tile;
    const std::string second = InputOffset(i, coords);
    e_.Linef("ring_whole = ring_whole && ", whole.empty() ? "" : absl::StrCat(whole, " && "), "aligned16(",
             InputPointer(i), ", ", first, ", ", bytes, ") && aligned16(", InputPointer(i), ", ", second, ", ", bytes,
             ");");
    CloseThreadTasks(i);
  }
  loop_start_ = "k0";
  loop_length_ = "kn";
  // One answer for the block: the loop of whole steps (Generate) takes
  // barriers.
  if (LeanLoop()) e_.Line("ring_whole = __syncthreads_and(ring_whole);");
}

void TiledGenerator::EmitWaitForPriorGrid() {
  // (Issued before the wait at every grid point, and so not in its branch.)
  if (ring_before_wait_) EmitRingPrologue();
  e_.Open("if (!waited)");
  if (StreamsAhead() && !ring_before_wait_) {
    const int64_t prefetched = std::min(stages_ - 1, kPrefetchedSteps);
    e_.Linef("// the first ", prefetched, " steps' whole copies into L2 while the kernel before finishes");
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int j = 0; j < ", prefetched, "; ++j)"));
    EmitStepRange("kr", "knr", "step_begin + j", /*guarded=*/true);
    loop_start_ = "kr";
    e_.Open(absl::StrCat("if (ring_whole && knr == ", b_.forloop.tile, ")"));
    for (const int i : RingOwners()) EmitWholeCopies(i, /*prefetch=*/true);
    e_.Close();
    loop_start_ = "k0";
    e_.Close();
  }
  e_.Line("wait_for_prior_grid();  // launched early: the kernel before it finishes first");
  if (!StreamsAhead()) e_.Line("launch_dependents();  // the kernel after it may start its blocks");
  e_.Line("waited = true;");
  e_.Close();
  if (ring_first_ && !ring_before_wait_) EmitRingPrologue();
}

bool TiledGenerator::StreamsAhead() const {
  if (stages_ == 0 || flash_.pv >= 0) return false;
  return BlockSteps() >= 4 * stages_;
}

void TiledGenerator::EmitRingPrologue() {
  if (stages_ == 0) return;
  const int64_t ahead = RingAhead();
  e_.Linef("// the first ", ahead, " steps' vector tiles, copied asynchronously into the ring");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", ahead, "; ++j)"));
  EmitRingIssue("step_begin + j", "j");
  e_.Close();
}

bool TiledGenerator::BarrierFirst() const {
  for (const InputPlan& plan : inputs_) {
    if (plan.ring && plan.cross_read) return true;
  }
  return false;
}

void TiledGenerator::EmitRingStep() {
  if (stages_ == 0) return;
  // (Steps ahead stages - 1, or stages - 2 where a pipelined flash step's
  // P@V still reads the stage the last step read: RingAhead.)
  const int64_t ahead = RingAhead();
  const auto issue = [&] {
    e_.Open("");
    EmitRingIssue(absl::StrCat("step + ", ahead),
                  absl::StrCat("static_cast<int>((step - step_begin + ", ahead, ") % ", stages_, ")"));
    e_.Close();
  };
  if (BarrierFirst()) {
    // Threads read each other's copies: wait for this step's, then one
    // barrier makes them visible and frees the stage the previous step
    // read, which the copies stages - 1 steps ahead reuse.
    // (Where the step issues the next one's scores, the next step's.)
    const bool next = lean_step_ && FlashScoresAhead();
    e_.Linef("// wait for ", next ? "the next step's" : "this step's", " vector tiles; after the barrier, the tiles ",
             ahead, " steps ahead go into the ",
             ahead == stages_ - 1 ? "stage the last step read"
                                  : absl::StrCat("stage read ", stages_ - ahead, " steps before"));
    e_.Linef("copy_async_wait<", ahead - (next ? 2 : 1), ">();");
    if (flash_.wgmma) {
      // The copies (and any zeros stored) made visible to wgmma's reads.
      e_.Line("#if KILN_WGMMA");
      e_.Line("fence_async_shared();");
      e_.Line("#endif");
    }
    Sync();
    issue();
  } else {
    e_.Linef("// the vector tiles ", ahead, " steps ahead into the ring; then wait for this step's");
    issue();
    e_.Linef("copy_async_wait<", ahead, ">();");
  }
  e_.Linef("const int stage = static_cast<int>((step - step_begin) % ", stages_, ");");
}

std::vector<int64_t> TiledGenerator::RingLayout(int i) const {
  const InputPlan& plan = inputs_[i];
  const ugraph::View& view = b_.inputs[b_.tile_ops[i].input].view;
  // The tensor axis behind each tile axis (-1: a broadcast one).
  std::vector<int> axis(view.shape.rank());
  for (size_t d = 0; d < axis.size(); ++d) axis[d] = static_cast<int>(d);
  for (size_t s = view.steps.size(); s-- > 0;) {
    const ugraph::ViewStep& step = view.steps[s];
    const Shape& in = s > 0 ? view.steps[s - 1].shape : view.source_shape;
    if (step.kind == ugraph::ViewStep::Kind::kPermute) {
      for (int& a : axis) a = a < 0 ? a : step.perm[a];
    } else if (step.kind == ugraph::ViewStep::Kind::kExpand) {
      const int lead = step.shape.rank() - in.rank();
      for (int& a : axis) {
        if (a < 0) continue;
        a = a < lead || !(in[a - lead] == step.shape[a]) ? -1 : a - lead;
      }
    } else {
      return {};
    }
  }
  const TileInfo& t = tiles_[i];
  std::vector<int64_t> key = {view.tensor, static_cast<int64_t>(plan.dtype), plan.width, plan.tasks,
                              axis[plan.vector_axis]};
  for (int d : plan.order) {
    const TileAxis& a = t.axes[d];
    if (plan.task_sizes[d] == 1) continue;
    for (int64_t v : {plan.task_sizes[d], static_cast<int64_t>(axis[d]), static_cast<int64_t>(a.source),
                      static_cast<int64_t>(a.grid_axis), a.size}) {
      key.push_back(v);
    }
  }
  return key;
}

void TiledGenerator::ShareRings() {
  for (InputPlan& plan : inputs_) {
    if (plan.ring_of < 0) continue;
    InputPlan& owner = inputs_[plan.ring_of];
    owner.swizzle = plan.swizzle = owner.swizzle || plan.swizzle;
    owner.panels = plan.panels = owner.panels || plan.panels;
    owner.cross_read = plan.cross_read = owner.cross_read || plan.cross_read;
  }
}

std::string TiledGenerator::RingElement(int i, const std::string& stage, const std::string& row,
                                        const std::string& col) const {
  const InputPlan& plan = inputs_[i];
  const int64_t per_row = plan.row_vectors(), width = plan.width;
  // Slot (row, col / width), swizzled like RingSlot, then the element.
  const std::string index =
      plan.swizzle
          ? absl::StrCat(SlotIndex(i, absl::StrCat("(", row, ") * ", per_row, " + (", col, ") / ", width)), " * ",
                         width, " + (", col, ") % ", width)
          : absl::StrCat("(", row, ") * ", per_row * width, " + (", col, ")");
  const std::string suffix = DTypeSuffix(plan.dtype);
  return absl::StrCat("bits_to_", suffix, "(load_bits_", suffix, "(&ring", i, "[", stage, " * ", plan.tasks, "], ",
                      index, "))");
}


int64_t TiledGenerator::inflight_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kInput || phase_[i] != Phase::kLoop) continue;
    const InputPlan& plan = inputs_[i];
    const int64_t load = plan.width * static_cast<int64_t>(DTypeSize(plan.dtype));
    if (plan.ring_of >= 0) continue;  // the owner's copies
    const int64_t steps = plan.ring ? stages_ - 1 : 1;
    bytes += steps * load * (plan.staged ? plan.tasks : std::min<int64_t>(plan.tasks, b_.threads));
  }
  return bytes;
}

}  // namespace kiln::codegen::tiled_internal
