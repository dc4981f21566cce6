// A region computed by a chain of kernels, where one kernel would hold too
// much (kernel-level ops before and after a graph-defined kernel, as Mirage's
// kernel graphs have them).
//
// What it is for: a product nested as a (x y), y shared by a batch dim of a
// and x (MLA's decode step, q (W_uk^T C^T), the latent cache C the same for
// every head), is worked out as (a x) y: a first kernel computes t = a x for
// every head at once, and the kernel after it reads t instead of a and x.
// Likewise at the end, p (c w) with c shared is (p c) w, the last product a
// kernel of its own. What is left between them has the shared operand only
// and one query row per head, so the heads become the rows of its products
// (the unit row axis dropped): one block reads C once for all heads, where a
// block per head read it once each, and each head's weights (W_uk, W_uv) no
// longer sit in its blocks' shared memory.
//
// Each part is a region of its own, searched as any region is; the factoring
// is checked over finite fields (VerifyFactoring) as the candidates are.
#ifndef KILN_OPTIMIZER_SEARCH_FACTOR_H_
#define KILN_OPTIMIZER_SEARCH_FACTOR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/region.h"
#include "optimizer/ugraph.h"

namespace kiln::search {

struct RegionPart {
  Region region;  // its classes numbered in order of first appearance
  // By part class: the whole region's class it stands for. A part's output
  // that another part reads differs from it only in unit axes.
  std::vector<int> classes;
  // By part input: the region input it is (>= 0), or -1 - p, part p's output.
  std::vector<int> sources;
};

struct FactoredRegion {
  std::vector<RegionPart> parts;  // in the order they run; the last computes the region's output
};

// The factoring above where the region has both products (a (x y) and, as
// its output, p (c w), with a, x, y, c, w inputs or permutes of inputs and
// one batch class that y and c lack over a unit row axis); none otherwise.
std::optional<FactoredRegion> FactorProducts(const Region& region);

// Whether the parts, run in order, compute the region: `tests` random tests
// over finite fields at small sizes (the verifier's algebra and bound).
absl::StatusOr<bool> VerifyFactoring(const Region& region, const FactoredRegion& factored, int tests,
                                     uint64_t seed);

// One kernel graph from the parts' graphs (each as Instantiate makes it:
// the part's inputs, then its output): tensors 0..n-1 the region's inputs,
// n its output, then the parts' outputs that other parts read. A part reads
// another's output through a reshape where their shapes differ.
absl::StatusOr<ugraph::KernelGraph> ComposeParts(const Region& region, const FactoredRegion& factored,
                                                 const std::vector<ugraph::KernelGraph>& graphs);

// The parts' graphs composed as ComposeParts does, but the last product,
// (p c) w, run by the middle part's kernel: after its loop (and, in a
// split loop, its combine) each row of p c, a head's, is multiplied by
// that head's w (TileOp::kRowMatmul) and the region's output stored, so p c
// never leaves the kernel and the last kernel's launch and hand-over are
// gone. Where the middle part's graph is one tiled kernel whose output tile
// holds whole rows (the heads on a grid axis or whole, each row's latent
// whole) and rounding p c to the product's dtype is what storing it did;
// none otherwise. Each part is checked as before; the fused kernel computes
// what the middle and last kernels did, in the same order of operations.
std::optional<ugraph::KernelGraph> FuseRowProduct(const Region& region, const FactoredRegion& factored,
                                                  const std::vector<ugraph::KernelGraph>& graphs);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_FACTOR_H_
