#include "optimizer/search/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "optimizer/codegen/generate.h"
#include "optimizer/search/region.h"
#include "optimizer/tile_analysis.h"

namespace kiln::search {
namespace {

// Bandwidth a streaming kernel reaches with `inflight` bytes requested at
// once over the GPU (Little's law), with a latency that grows as the
// memory system fills (CostConstants).
double ReachedBandwidth(double inflight, double peak, const CostConstants& c) {
  const double idle = c.idle_latency_us * 1e-6, loaded = c.loaded_latency_us * 1e-6;
  double reached = peak;
  for (int i = 0; i < 8; ++i) reached = std::min(peak, inflight / (idle + loaded * reached / peak));
  return reached;
}

}  // namespace

double EstimateMicroseconds(const ugraph::KernelGraph& graph, const CostConstants& constants) {
  constexpr double kBandwidth = 3.0e12, kFlops = 50e12, kSms = ugraph::kPlannedSms;
  double total = 0;
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    const ugraph::BlockGraph& b = graph.kernels[k].block;
    const double split = static_cast<double>(b.loop_split);
    const double blocks = static_cast<double>(ugraph::LaunchedBlocks(b));
    const double steps = std::max(1.0, std::ceil(static_cast<double>(ugraph::NominalTiles(b.forloop)) / split));
    auto tiles = ugraph::AnalyzeTiles(b);
    if (!tiles.ok()) return kInfeasibleUs;
    // Blocks an SM holds at once: what the generated kernel's registers and
    // shared memory allow (its launch bounds).
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, static_cast<int>(k));
    if (!source.ok()) return kInfeasibleUs;
    const double resident = static_cast<double>(std::max<int64_t>(1, source->min_blocks));
    // Flops by the path that runs them: each matmul's own (op_paths), the
    // other ops' at the kernel's slowest matmul's rate (as before there
    // were per-op paths).
    double unique_bytes = 0, step_bytes = 0, other_bytes = 0, flops = 0;
    std::map<codegen::MatmulPath, double> matmul_flops;
    double step_elements = 0;  // the step's largest computed tile (see phases_us)
    for (const std::vector<int>* tensors : {&graph.kernels[k].inputs, &graph.kernels[k].outputs}) {
      for (int t : *tensors) {
        double n = static_cast<double>(DTypeSize(graph.tensors[t].dtype));
        for (const Dim& d : graph.tensors[t].shape) n *= static_cast<double>(NominalSize(d));
        unique_bytes += n;
      }
    }
    // A row product's matrices are read where they are used, a row's by
    // the block that computes it (no tile each block loads); each row takes
    // two barriers, and the blocks of a split loop share the rows out.
    std::vector<bool> row_matrix(b.tile_ops.size(), false);
    double row_us = 0;
    for (const ugraph::TileOp& op : b.tile_ops) {
      if (op.kind == ugraph::TileOp::Kind::kRowMatmul) row_matrix[op.args[1]] = true;
    }
    for (size_t i = 0; i < b.tile_ops.size(); ++i) {
      const ugraph::TileInfo& t = (*tiles)[i];
      const double reps = t.in_loop ? steps : 1;
      const ugraph::TileOp& op = b.tile_ops[i];
      if (t.in_loop && op.kind != ugraph::TileOp::Kind::kInput) {
        step_elements = std::max(step_elements, static_cast<double>(t.elements()));
      }
      if (op.kind == ugraph::TileOp::Kind::kRowMatmul) {
        const double rows = static_cast<double>(t.axes[0].size);
        const double per_block = std::ceil(rows / std::min(split, rows));
        flops += 2.0 * per_block * static_cast<double>(t.axes[2].size * (*tiles)[op.args[0]].axes[1].size);
        row_us += 2 * constants.phase_us * per_block;
      } else if (op.kind == ugraph::TileOp::Kind::kInput && row_matrix[i]) {
        continue;
      } else if (op.kind == ugraph::TileOp::Kind::kInput) {
        const auto& view = b.inputs[op.input].view;
        const double bytes = static_cast<double>(t.elements()) * DTypeSize(graph.tensors[view.tensor].dtype);
        (t.in_loop ? step_bytes : other_bytes) += bytes;
      } else if (op.kind == ugraph::TileOp::Kind::kMatmul) {
        // Tensor cores take rows in slabs of 16 (one query row of decode
        // costs a whole slab).
        // (A product the generator folds into another's code, such as the
        // flash path's, has no path of its own: the kernel's.)
        codegen::MatmulPath path = i < source->op_paths.size() ? source->op_paths[i] : codegen::MatmulPath::kNone;
        if (path == codegen::MatmulPath::kNone) path = source->matmul_path;
        const double rows = static_cast<double>(t.axes[t.axes.size() - 2].size);
        const double slab_rows = path == codegen::MatmulPath::kTensorCores ? std::ceil(rows / 16) * 16 : rows;
        matmul_flops[path] += 2.0 * static_cast<double>(t.elements()) / rows * slab_rows *
                              static_cast<double>((*tiles)[op.args[0]].axes.back().size) * reps;
      } else {
        flops += static_cast<double>(t.elements()) * reps;
      }
    }
    // Bytes every block reads beyond the unique ones mostly hit L2 (a
    // tenth of the cost). A split loop's blocks write their partial
    // accumulators and the last one reads them back (L2): a chain of
    // round trips (write, fence, count, read) at the kernel's end that
    // took about 4 us on an H100 (rmsnorm_linear_bs1 split 8 ways, 28.4 us
    // with the combine, 24.1 us without).
    const double block_bytes = step_bytes * steps + other_bytes;
    double bytes = unique_bytes + 0.1 * std::max(0.0, blocks * block_bytes - unique_bytes);
    double combine_us = 0;
    if (b.loop_split > 1) {
      bytes += 0.2 * static_cast<double>(ugraph::SplitWorkspaceBytesPerPoint(b)) * blocks / split;
      combine_us = constants.combine_us;
    }
    // A block has the generated kernel's bytes in flight (a loop step's
    // prefetched tiles, or the ring's steps ahead); blocks beyond what the
    // SMs hold wait for a later wave, and the last wave may run part-full.
    const double concurrent = std::min(blocks, kSms * resident);
    const double waves = std::ceil(blocks / concurrent);
    const double inflight = source->inflight_bytes > 0 ? static_cast<double>(source->inflight_bytes)
                                                       : std::max(step_bytes, other_bytes / steps);
    const double bandwidth = ReachedBandwidth(concurrent * inflight, kBandwidth, constants);
    const double memory_us = bytes / bandwidth * 1e6 * (waves * concurrent / blocks);
    // Matmul rates on an H100 by how the kernel runs them: tensor cores
    // (mma.sync, fragments flushed through shared memory), FMAs on
    // registers, FMAs on shared-memory tiles (rmsnorm_linear_bs8 ran at
    // about 12 TFLOP/s that way).
    const auto rate = [&](codegen::MatmulPath path) {
      switch (path) {
        case codegen::MatmulPath::kTensorCores:
          // mma.sync's latency is hidden by other warps, and each warp's
          // other instructions by the rest: the flash path's steps ran at
          // about 70 TFLOP/s with 4 warps issuing and 99 with 8 on an H100
          // (gqa_bs8, query tiles of 64 and 128 rows), so as the square root
          // of the warps, to 200 with 32.
          return 200e12 * std::sqrt(std::min(1.0, resident * static_cast<double>(source->mma_warps) / 32.0));
        case codegen::MatmulPath::kRegisters: return 25e12;
        case codegen::MatmulPath::kSharedMemory: return 10e12;
        case codegen::MatmulPath::kNone: break;
      }
      return kFlops;
    };
    double block_compute_s = flops / rate(source->matmul_path);
    for (const auto& [path, f] : matmul_flops) block_compute_s += f / rate(path);
    const double compute_us = blocks * block_compute_s * 1e6 / std::min(1.0, blocks / kSms);
    // Each loop step ends in a barrier (CostConstants::step_us per step and
    // wave); a step of several barriers is a chain of phases per block,
    // overlapped with the memory traffic but not hidden by it.
    // A phase passes over the step's largest computed tile: its cost grows
    // with the elements each of the threads that work on it takes past
    // two. (Counted over all threads, the flash path's 4-warp schedules
    // cost twice their 8-warp forms a phase, and twice the blocks an SM
    // holds made up for it exactly: qknorm_gqa_bs8's schedules all came
    // to one estimate, 135 us, measured 64-135 us on an H100.)
    const double per_phase =
        constants.phase_us * std::max(1.0, step_elements / static_cast<double>(source->step_threads) / 2.0);
    const double phases_us =
        per_phase * static_cast<double>(std::max<int64_t>(0, source->step_barriers - 1)) * steps * waves;
    // Groups of warps that shared out the flash steps' keys merge after the
    // loop: two more phases a wave. (Without them, qknorm_gqa_bs8's grouped
    // 64-row schedules tied its 128-row ones at 135 us and took the 6 timed
    // places: 59.7 us chosen, against 47.6.)
    // Where the groups' warps share out O's columns (MLA's attention over
    // its latent), the merge moves a warp's registers, not the step's tile:
    // two phases of the floor (on an H200 its grouped kernels ran the three
    // 9.85 us against 10.06 ungrouped, the merge included).
    const double merge_phase = source->flash_groups_share_columns ? constants.phase_us : per_phase;
    const double merge_us = source->flash_groups > 1 ? 2 * merge_phase * waves : 0;
    total += constants.launch_us + std::max({memory_us, compute_us, phases_us}) + constants.step_us * steps * waves +
             combine_us + merge_us + row_us;
  }
  return total;
}

}  // namespace kiln::search
