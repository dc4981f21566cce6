// What each tile of a kTiled block is: its axes (where each comes from and
// how long it is) and whether it is computed every loop step. The validator,
// the interpreters and the code generator all read tiles through this.
#ifndef KILN_OPTIMIZER_TILE_ANALYSIS_H_
#define KILN_OPTIMIZER_TILE_ANALYSIS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/ugraph.h"

namespace kiln::ugraph {

// One axis of a tile. Element i of a kGrid axis is at i + block[grid_axis] *
// size of its tensor dim, of a kLoop axis at i + step * size; it is in range
// while that is below `extent`. kFull axes cover a (concrete) dim whole;
// kOne axes have size 1 (reduced, or broadcast).
struct TileAxis {
  enum class Source : uint8_t { kOne, kFull, kGrid, kLoop };
  Source source = Source::kOne;
  int grid_axis = -1;  // kGrid
  Dim extent = Dim(1);
  int64_t size = 1;

  bool operator==(const TileAxis& o) const {
    return source == o.source && grid_axis == o.grid_axis && extent == o.extent && size == o.size;
  }
};

struct TileInfo {
  std::vector<TileAxis> axes;
  bool in_loop = false;  // computed at every for-loop step
  // Reads a for-loop accumulator: computed once after the loop. A tile that
  // is neither (constants, inputs read whole) is computed once before the
  // loop, and loop-step tiles may read it.
  bool after_loop = false;
  int64_t elements() const {
    int64_t n = 1;
    for (const TileAxis& a : axes) n *= a.size;
    return n;
  }
  // Floats of its f32 buffer: the elements rounded up to 4 (16 bytes), so
  // that buffers laid end to end stay aligned for vector access.
  int64_t padded_floats() const { return (elements() + 3) / 4 * 4; }
};

// The tile of every op of `block` (kind kTiled), or InvalidArgument naming
// the first op whose operands do not fit (shapes, sources, loop placement).
absl::StatusOr<std::vector<TileInfo>> AnalyzeTiles(const BlockGraph& block);

// Floats of for-loop accumulators (kAccumulate tiles, padded_floats each) a
// block holds: what one block of a split loop hands to the others.
int64_t AccumulatorFloats(const BlockGraph& block, const std::vector<TileInfo>& tiles);
// A kStableExp op's rows: its tile with the max axis at size 1 (kOne); and
// whether its max runs along the loop (a running max, which accumulators
// follow).
TileInfo ShiftRowTile(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op);
bool IsRunningMax(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op);
// What a block of a split loop hands over, in floats: its accumulators,
// then the rows of its running maxes (each padded like a tile buffer);
// and where op's rows start there.
int64_t SplitFloatsPerBlock(const BlockGraph& block, const std::vector<TileInfo>& tiles);
int64_t RunningMaxOffset(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op);
// Device workspace a split kernel needs per grid point (a point of the
// other grid axes), in bytes: the partial accumulators (and running maxes)
// of its loop_split blocks. 0 when the loop is not split.
int64_t SplitWorkspaceBytesPerPoint(const BlockGraph& block);

// Whether two axes may meet in an elementwise op (equal, or one is kOne).
bool AxesBroadcast(const TileAxis& a, const TileAxis& b);

}  // namespace kiln::ugraph

#endif  // KILN_OPTIMIZER_TILE_ANALYSIS_H_
