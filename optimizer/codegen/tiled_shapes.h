// Tile shapes as the tiled code generator reckons with them (sizes,
// row-major orders and indices) and how many of a kernel's blocks an SM
// holds; free of the generator's state (tiled_generator.h).
#ifndef KILN_OPTIMIZER_CODEGEN_TILED_SHAPES_H_
#define KILN_OPTIMIZER_CODEGEN_TILED_SHAPES_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizer/tile_analysis.h"
#include "tensor/dtype.h"

namespace kiln::codegen::tiled_internal {

using ugraph::TileAxis;
using ugraph::TileInfo;

// A launch dim's block index and block count, as code.
inline constexpr const char* kBlockIdx[3] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
inline constexpr const char* kGridDim[3] = {"gridDim.x", "gridDim.y", "gridDim.z"};

inline bool IsFloatStorage(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

inline std::vector<int64_t> Sizes(const TileInfo& t) {
  std::vector<int64_t> sizes;
  for (const TileAxis& a : t.axes) sizes.push_back(a.size);
  return sizes;
}

inline std::vector<int> RowMajorOrder(size_t rank) {
  std::vector<int> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = static_cast<int>(d);
  return order;
}

inline int64_t Product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

// Row-major index of `coords` (int expressions) in a tile of `sizes`.
inline std::string RowMajor(const std::vector<int64_t>& sizes, const std::vector<std::string>& coords) {
  std::string out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    const int64_t stride = Product(sizes, d + 1, sizes.size());
    const std::string term = stride == 1 ? coords[d] : absl::StrCat(coords[d], " * ", stride);
    absl::StrAppend(&out, out.empty() ? "" : " + ", term);
  }
  return out.empty() ? "0" : out;
}

// Whether a view keeps its source's runs of adjacent elements adjacent
// (tiled_load.cc), so that 16-byte vectors along its contiguous axis
// (ContiguousDim) hold what they would in the tensor.
bool KeepsRuns(const ugraph::View& view);

// Blocks of `threads` threads an SM holds at once, given the shared memory
// and registers (per thread) each needs: what a kernel's launch bounds ask.
inline int64_t BlocksPerSm(int64_t threads, int64_t shared_bytes, int64_t registers) {
  constexpr int64_t kSharedPerSm = 228 * 1024, kReservedPerBlock = 1024, kRegistersPerSm = 65536;
  const int64_t rounded = (registers + 7) / 8 * 8;
  return std::max<int64_t>(1, std::min<int64_t>({1024 / threads, kSharedPerSm / (shared_bytes + kReservedPerBlock),
                                                 kRegistersPerSm / (threads * rounded)}));
}

}  // namespace kiln::codegen::tiled_internal

#endif  // KILN_OPTIMIZER_CODEGEN_TILED_SHAPES_H_
