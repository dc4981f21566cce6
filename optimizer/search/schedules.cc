#include "optimizer/search/schedules.h"

#include <algorithm>
#include <set>

namespace kiln::search {
namespace {

constexpr int64_t kWholeLimit = 256;  // the largest class read whole

// Whether class c is a batch dim (a leading dim) of some matmul's result.
bool IsBatchClass(const Region& region, int c) {
  for (const RegionOp& op : region.ops) {
    if (op.kind != RegionOp::Kind::kMatmul) continue;
    if (std::find(op.classes.begin(), op.classes.end() - 2, c) != op.classes.end() - 2) return true;
  }
  return false;
}

bool IsOutputClass(const Region& region, int c) {
  const auto& out = region.ops[region.output_op()].classes;
  return std::find(out.begin(), out.end(), c) != out.end();
}

}  // namespace

std::vector<Schedule> Mappings(const Region& region) {
  const int classes = static_cast<int>(region.class_size.size());
  std::vector<int> reduced;
  for (int c = 0; c < classes; ++c) {
    if (region.class_reduced[c] && !IsOutputClass(region, c) && !(region.class_size[c] == Dim(1))) {
      reduced.push_back(c);
    }
  }
  auto whole_ok = [&](int c) {
    const Dim& d = region.class_size[c];
    return d.is_concrete() && d.value() <= kWholeLimit;
  };
  // Output classes, innermost first, onto grid x, y, z. With more than
  // three, the innermost that a block can hold whole are read whole
  // (grouped-query attention's head dim, beside its KV heads, group and
  // queries).
  Schedule base;
  base.map.assign(classes, Schedule::Map::kFull);
  base.grid_axis.assign(classes, -1);
  base.tile.assign(classes, 1);
  const auto& out = region.ops[region.output_op()].classes;
  std::vector<int> split;
  for (auto it = out.rbegin(); it != out.rend(); ++it) {
    if (region.class_size[*it] == Dim(1) || std::find(split.begin(), split.end(), *it) != split.end()) continue;
    // An output class that is also summed over (attention over MLA's
    // latent: the values are the keys' rows) is read whole: a block with
    // part of it would sum part of the scores.
    if (region.class_reduced[*it]) {
      if (!whole_ok(*it)) return {};
      continue;
    }
    split.push_back(*it);
  }
  for (size_t i = 0; i < split.size() && split.size() > 3;) {
    if (whole_ok(split[i])) {
      split.erase(split.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (split.size() > 3) return {};  // more than three split dims
  for (size_t axis = 0; axis < split.size(); ++axis) {
    base.map[split[axis]] = Schedule::Map::kGrid;
    base.grid_axis[split[axis]] = static_cast<int>(axis);
  }
  std::vector<Schedule> mappings;
  // No loop: every reduced class read whole.
  bool all_whole = true;
  for (int c : reduced) all_whole &= whole_ok(c);
  if (all_whole) mappings.push_back(base);
  for (int loop : reduced) {
    bool others_whole = true;
    for (int c : reduced) others_whole &= c == loop || whole_ok(c);
    if (!others_whole) continue;
    Schedule s = base;
    s.map[loop] = Schedule::Map::kLoop;
    mappings.push_back(s);
  }
  for (Schedule& s : mappings) s = ScheduleVariants(region, s).front();
  // The most promising first, as the workers take them in order and a deadline may
  // stop the last: loops over the larger classes (the ones that least fit
  // a block whole), then the mapping without a loop.
  auto extent = [&](const Schedule& s) {
    for (size_t c = 0; c < s.map.size(); ++c) {
      if (s.map[c] == Schedule::Map::kLoop) return NominalSize(region.class_size[c]);
    }
    return int64_t{0};
  };
  std::stable_sort(mappings.begin(), mappings.end(),
                   [&](const Schedule& a, const Schedule& b) { return extent(a) > extent(b); });
  return mappings;
}

std::vector<Schedule> ScheduleVariants(const Region& region, const Schedule& mapping) {
  std::vector<Schedule> out = {mapping};
  out[0].loop_split = 1;
  out[0].threads = 256;
  auto fit = [&](int c, int64_t t) {
    const Dim& d = region.class_size[c];
    return d.is_concrete() ? std::min<int64_t>(t, d.value()) : t;
  };
  for (size_t c = 0; c < mapping.map.size(); ++c) {
    std::vector<int64_t> choices;
    if (mapping.map[c] == Schedule::Map::kLoop) choices = {32, 64, 128, 256};
    if (mapping.map[c] == Schedule::Map::kGrid) {
      // (128 rows on y: attention's queries, a slab of 16 per warp.)
      choices = mapping.grid_axis[c] == 0 ? std::vector<int64_t>{16, 32, 64, 128} : std::vector<int64_t>{4, 16, 64, 128};
      // A batch dim of the products may also go one per block (attention's
      // batch and heads: small tiles leave room to stream K and V).
      if (mapping.grid_axis[c] != 0 && IsBatchClass(region, static_cast<int>(c))) choices.insert(choices.begin(), 1);
    }
    if (choices.empty()) continue;
    std::vector<Schedule> next;
    for (const Schedule& s : out) {
      std::set<int64_t> seen;
      for (int64_t t : choices) {
        const int64_t tile = fit(static_cast<int>(c), t);
        if (!seen.insert(tile).second) continue;
        Schedule v = s;
        v.tile[c] = tile;
        next.push_back(v);
      }
    }
    out = std::move(next);
  }
  // The loop's steps shared by several blocks (on a grid axis left free),
  // each block keeping at least two steps (one where a grid of one block
  // splits: see below). Where all three axes are
  // taken, a class whose one tile covers it (one block along its axis) is
  // read whole instead, which frees its axis (attention's head dim: batch,
  // heads and queries take the others).
  int loop = -1;
  for (size_t c = 0; c < mapping.map.size(); ++c) {
    if (mapping.map[c] == Schedule::Map::kLoop) loop = static_cast<int>(c);
  }
  // A symbolic extent (a decode step's KV length) counts at its largest.
  if (loop < 0) return out;
  const int64_t extent = NominalSize(region.class_size[loop]);
  std::vector<Schedule> split;
  for (const Schedule& s : out) {
    split.push_back(s);
    Schedule free = s;
    int taken = 0;
    for (size_t c = 0; c < s.map.size(); ++c) taken += s.map[c] == Schedule::Map::kGrid;
    for (size_t c = 0; c < s.map.size() && taken == 3; ++c) {
      const Dim& d = region.class_size[c];
      if (s.map[c] != Schedule::Map::kGrid || !d.is_concrete() || s.tile[c] < d.value()) continue;
      free.map[c] = Schedule::Map::kFull;
      free.grid_axis[c] = -1;
      free.tile[c] = 1;
      --taken;
    }
    if (taken == 3) continue;
    const int64_t steps = (extent + s.tile[loop] - 1) / s.tile[loop];
    // A grid of one block (heads as the rows of one block: MLA's attention
    // over its latent) splits further, to fill more of the SMs, down to a
    // step a block. (On an H200, MLA's decode step with 64 blocks of one
    // step of 64 keys, hand-timed: 8.65 us for the two kernels against
    // 8.95 with two steps of 32; 8.40 with the scores shared out, which
    // takes the larger step: FlashPlan::scores_shared.)
    bool one_block = true;
    for (size_t c = 0; c < s.map.size(); ++c) {
      one_block &= s.map[c] != Schedule::Map::kGrid || s.tile[c] >= NominalSize(region.class_size[c]);
    }
    for (int64_t ways : {2, 4, 8, 16, 32, 64}) {
      if (steps < (one_block ? 1 : 2) * ways || (ways > 16 && !one_block)) break;
      Schedule v = free;
      v.loop_split = ways;
      split.push_back(v);
    }
  }
  // Attention's each also with 4 warps: where a block's tensor-core work
  // has rows for only 4 warps (64-query tiles), two such blocks share an SM
  // instead of one leaving half its warps idle. (Streaming kernels ran a
  // third slower so, on an H100: gated_mlp_bs8 38 us against 28.)
  const bool softmax = std::any_of(region.ops.begin(), region.ops.end(),
                                   [](const RegionOp& op) { return op.kind == RegionOp::Kind::kStableExp; });
  const size_t n = softmax ? split.size() : 0;
  for (size_t i = 0; i < n; ++i) {
    Schedule v = split[i];
    v.threads = 128;
    split.push_back(v);
  }
  return split;
}

}  // namespace kiln::search
