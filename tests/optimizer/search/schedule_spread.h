// Test helpers for the search's kernels: a spread of the schedule variants
// of a found candidate (the tile sizes and loop splits the search chooses
// among), so that tests cover more of what the code generator can be asked
// for than the one schedule the cost model picks; and the check that a
// generated kernel compiles for Hopper (NVRTC needs no GPU).
#ifndef KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_
#define KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/candidate.h"
#include "optimizer/search/schedules.h"

namespace kiln::search {

// `chosen` first, then `count` of the variants ScheduleVariants lists,
// picked at the fractional parts of i times the golden ratio: spread over
// the list and out of step with its nested periods (deterministic).
inline std::vector<Schedule> ScheduleSpread(const Region& region, const Schedule& chosen, size_t count) {
  const std::vector<Schedule> all = ScheduleVariants(region, chosen);
  std::vector<Schedule> out = {chosen};
  for (size_t i = 1; i <= count && i <= all.size(); ++i) {
    const double at = static_cast<double>(i) * 0.6180339887;
    out.push_back(all[static_cast<size_t>((at - static_cast<double>(static_cast<size_t>(at))) * all.size())]);
  }
  return out;
}

// For sm_90 (mma.sync) and, where the kernel has a wgmma form, for sm_90a
// (the target kiln compiles for on Hopper) too.
inline void ExpectCompilesForHopper(const jit::NvrtcApi& nvrtc, const codegen::KernelSource& source) {
  for (const char* arch : {"sm_90", "sm_90a"}) {
    if (std::string(arch) == "sm_90a" && source.source.find("wgmma_m64") == std::string::npos) continue;
    jit::CompileOptions options;
    options.arch = arch;
    absl::StatusOr<std::string> cubin = jit::CompileToCubin(nvrtc, codegen::AssembleSource(source.source), options);
    EXPECT_TRUE(cubin.ok()) << arch << ": " << cubin.status() << "\n" << source.source;
  }
}

// A schedule of a found candidate, its kernel graph and source.
struct VariantKernel {
  Schedule schedule;
  ugraph::KernelGraph graph;
  codegen::KernelSource source;
};

// The kernels of `found` under `schedules` that the code generator emits
// (tiles past shared memory it refuses, as the search skips them).
inline std::vector<VariantKernel> KernelsOf(const Region& region, const Candidate& found,
                                            const std::vector<Schedule>& schedules) {
  std::vector<VariantKernel> out;
  for (const Schedule& s : schedules) {
    Candidate candidate = found;
    candidate.schedule = s;
    absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(region, candidate, region.class_size);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) continue;
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*graph, 0);
    if (source.ok()) out.push_back({s, *std::move(graph), *std::move(source)});
  }
  return out;
}

// Those under ScheduleSpread's schedules, each checked to compile for Hopper.
inline std::vector<codegen::KernelSource> CompiledSpread(const jit::NvrtcApi& nvrtc, const Region& region,
                                                         const Candidate& found, size_t count) {
  std::vector<codegen::KernelSource> out;
  for (VariantKernel& k : KernelsOf(region, found, ScheduleSpread(region, found.schedule, count))) {
    ExpectCompilesForHopper(nvrtc, k.source);
    out.push_back(std::move(k.source));
  }
  return out;
}

// The kernel of `found` under its first schedule variant that `pick`
// accepts (a failure where none does).
inline codegen::KernelSource KernelWithSchedule(const Region& region, Candidate found,
                                                const std::function<bool(const Schedule&)>& pick) {
  for (const Schedule& s : ScheduleVariants(region, found.schedule)) {
    if (!pick(s)) continue;
    found.schedule = s;
    absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(region, found, region.class_size);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) return {};
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*graph, 0);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *std::move(source) : codegen::KernelSource{};
  }
  ADD_FAILURE() << "no such schedule variant";
  return {};
}

// Those under every one of ScheduleVariants' schedules.
inline std::vector<VariantKernel> KernelsOfVariants(const Region& region, const Candidate& found) {
  return KernelsOf(region, found, ScheduleVariants(region, found.schedule));
}

// 1 where a kernel of `g` generates a source that `wins`, else 2: a timer
// (SearchOptions::time_graph) under which such graphs run fastest.
inline double FastestWhere(const ugraph::KernelGraph& g,
                           const std::function<bool(const codegen::KernelSource&)>& wins) {
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(g, static_cast<int>(k));
    if (source.ok() && wins(*source)) return 1.0;
  }
  return 2.0;
}

// A timer under which a graph with a kernel whose warps share out its
// scores within their group (FlashPlan::scores_shared) runs fastest.
inline absl::StatusOr<double> SharedScoresFastest(const ugraph::KernelGraph& g) {
  return FastestWhere(
      g, [](const codegen::KernelSource& s) { return s.source.find("sync_warps(1 + kg,") != std::string::npos; });
}

// The blocks a kernel's clusters hold (KernelSource::split_cluster).
inline int64_t ClusterBlocks(const codegen::KernelSource& s) {
  return int64_t{s.split_cluster[0]} * s.split_cluster[1] * s.split_cluster[2];
}

// A timer under which a graph with a kernel whose row product's blocks
// make clusters runs fastest.
inline absl::StatusOr<double> ClusterFastest(const ugraph::KernelGraph& g) {
  return FastestWhere(g, [](const codegen::KernelSource& s) { return ClusterBlocks(s) > 1; });
}

// How many of `sources` contain `text`.
inline int Containing(const std::vector<codegen::KernelSource>& sources, const std::string& text) {
  int n = 0;
  for (const codegen::KernelSource& s : sources) n += s.source.find(text) != std::string::npos;
  return n;
}

}  // namespace kiln::search

#endif  // KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_
