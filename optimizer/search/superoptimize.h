// The superoptimizer's driver for one region: cache lookup, enumeration of
// candidate graph-defined kernels (enumerate.h), finite-field verification
// and a floating-point check (verify.h), ranking by a cost model, timing of
// the best few on the GPU when a timer is given, and the on-disk cache of
// the choice. The default lowering stays the floor: a region whose search
// finds nothing better (or runs out of budget) keeps it.
#ifndef KILN_OPTIMIZER_SEARCH_SUPEROPTIMIZE_H_
#define KILN_OPTIMIZER_SEARCH_SUPEROPTIMIZE_H_

#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/candidate.h"
#include "optimizer/search/cost_model.h"
#include "optimizer/search/region.h"
#include "optimizer/ugraph.h"

namespace kiln::search {

struct SearchOptions {
  // Per region: search + verify + compile + time. Enumeration stops short
  // of it; compiles still running at its end are not waited for once a
  // candidate has been timed.
  double budget_seconds = 4.0;
  int max_loop_ops = 4;
  int max_post_ops = 5;
  int threads = 0;              // verification workers; 0: the hardware's
  int verify_tests = 3;         // finite-field tests per candidate
  int time_top = 6;             // candidates timed on the GPU
  int time_rounds = 3;          // interleaved timing rounds; a candidate's time is its best round
  // The fastest this many timed are timed again with one grid point a
  // block (ugraph::BlockGraph::one_point_blocks), where that changes their
  // code; the faster form is kept. 0: the grid-stride form only.
  int one_point_forms = 3;
  uint64_t seed = 0x6b696c6e;
  std::string cache_dir;        // empty: no disk cache
  std::string arch = "cpu";     // part of the cache key (e.g. sm_90a)
  // Microseconds per run of a kernel graph on the GPU, or an error; unset
  // on a machine without one (the cost model alone then chooses).
  std::function<absl::StatusOr<double>(const ugraph::KernelGraph&)> time_graph;
  // Starts compiling a graph's kernels ahead of timing it (optional); the
  // future is ready once they are compiled. Without it, time_graph compiles.
  std::function<std::shared_future<void>(const ugraph::KernelGraph&)> start_compile;
  // Microseconds of the region under the default lowering (for the report).
  std::function<absl::StatusOr<double>()> time_default;
};

// One candidate timed on the GPU: its schedule, the cost model's estimate
// and the measurement (best of the rounds); where it was timed so too, the
// measurement of its one-point form (SearchOptions::one_point_forms).
struct TimedCandidate {
  std::string schedule;
  double estimated_us = 0;
  double measured_us = 0;
  std::optional<double> one_point_us;
};

struct SearchReport {
  bool from_cache = false;
  int mappings = 0;
  int64_t prefixes = 0, invalid = 0, pruned = 0, complete = 0, duplicates = 0;
  int64_t verified = 0, rejected = 0, float_rejected = 0, variants = 0, timed = 0;
  int64_t factored = 0;  // of the variants: a factored region's composed graphs (factor.h)
  int64_t time_failed = 0;  // candidates the GPU could not compile or run
  int64_t compile_late = 0;  // candidates left untimed, their compiles not done at the budget's end
  std::string time_error;   // the first such failure
  std::vector<TimedCandidate> timings;  // in the cost model's order
  bool out_of_time = false;
  double search_s = 0, verify_s = 0, time_s = 0, total_s = 0;
  // Parts of time_s: waiting for the candidates' compiles once their checks
  // were done, and for the default lowering's compile and timing.
  double compile_wait_s = 0, default_wait_s = 0;
  int64_t z3_queries = 0, z3_cache_hits = 0;
  double z3_s = 0;  // time inside Z3, summed over the mappings' workers
  double estimated_us = 0;            // cost model, chosen candidate
  std::optional<double> measured_us;  // GPU, chosen candidate
  std::optional<double> default_us;   // GPU, default lowering
  std::string chosen_text, chosen_dot, schedule;
  double float_error = 0;
  std::string ToString() const;
};

struct SearchResult {
  std::optional<ugraph::KernelGraph> graph;  // at the region's sizes; empty: keep the default
  std::optional<Candidate> candidate;  // the chosen graph's, where it is one kernel
  std::vector<Candidate> parts;       // a factored region's chosen graph: its parts' (factor.h)
  SearchReport report;
};

absl::StatusOr<SearchResult> Superoptimize(const Region& region, const SearchOptions& options);

// The cache file of a region (under options.cache_dir).
std::string CachePath(const Region& region, const SearchOptions& options);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_SUPEROPTIMIZE_H_
