// A candidate found by the search: how one thread block covers each dim
// class of the region (a Schedule), and the block's tile program, with
// constants that depend on sizes (1/n of a mean) kept symbolic. Instantiate
// turns it into a uGraph for any sizes of the classes: the verifier's small
// ones, or the region's real ones.
#ifndef KILN_OPTIMIZER_SEARCH_CANDIDATE_H_
#define KILN_OPTIMIZER_SEARCH_CANDIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/region.h"
#include "optimizer/ugraph.h"

namespace kiln::search {

struct Schedule {
  enum class Map : uint8_t { kFull, kGrid, kLoop };
  std::vector<Map> map;         // by class
  std::vector<int> grid_axis;   // by class, for kGrid
  std::vector<int64_t> tile;    // by class, for kGrid and kLoop
  int threads = 256;
  // Blocks that share the loop's steps (BlockGraph::loop_split).
  int64_t loop_split = 1;
  std::string ToString(const Region& region) const;
};

struct CandidateOp {
  ugraph::TileOp op;
  // A kConstant whose value is 1 / (product of these classes' sizes).
  std::vector<int> inverse_of_classes;
};

struct Candidate {
  Schedule schedule;
  std::vector<CandidateOp> ops;
  int output = -1;
  // The iterator behind each input #i: a region op of kind kInput, or a
  // permute of one.
  std::vector<int> iterator_ops;
};

// The classes of the axes an iterator over region op `op_index` (an input,
// or a permute of one) delivers: the op's own, widened to the widest product
// that reads it. Batch dims the op lacks are put in front (MLA's latent
// cache, shared by the heads), and a batch dim of size 1 where the product's
// is larger takes the product's class (grouped-query attention's K and V,
// shared by a group of query heads). Where they differ from the op's own
// classes, the iterator reads it through an expand (stride 0 along those).
std::vector<int> IteratorClasses(const Region& region, int op_index);

// The uGraph of the candidate with the classes at `sizes`: tensors t0..tn-1
// the region's inputs, tn its output; one kTiled kernel.
absl::StatusOr<ugraph::KernelGraph> Instantiate(const Region& region, const Candidate& candidate,
                                                const std::vector<Dim>& sizes);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_CANDIDATE_H_
