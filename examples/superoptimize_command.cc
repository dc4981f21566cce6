// `kiln superoptimize` (explain what the search does per region) and `kiln
// bench fused` (the fused-op suite of ../shared/bench/peers.py: kernel
// times, search times cold and warm, JSON for compare.py).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "jit/options.h"
#include "nlohmann/json.hpp"
#include "optimizer/codegen/generate.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/graph_runner.h"
#include "optimizer/lower.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"

ABSL_FLAG(std::string, cases, "", "fused cases to run, comma-separated (default: all)");
ABSL_FLAG(bool, dot, false, "superoptimize: also print the chosen uGraph as Graphviz DOT");
ABSL_FLAG(bool, source, false,
          "superoptimize: also print the CUDA source the code generator emits for each chosen kernel");
ABSL_FLAG(double, budget, 4.0, "search budget per region, seconds");
ABSL_FLAG(int, time_top, 6, "candidates the search times on the GPU per region");
ABSL_FLAG(std::string, out, "fused.json", "bench fused: where to write the JSON for compare.py");

namespace kiln::cli {
namespace {

std::vector<std::string> SelectedCases() {
  const std::string flag = absl::GetFlag(FLAGS_cases);
  if (flag.empty()) return search::FusedCaseNames();
  return absl::StrSplit(flag, ',', absl::SkipEmpty());
}

// The region's trace under the default lowering, as one kernel graph.
absl::StatusOr<ugraph::KernelGraph> DefaultGraph(const search::FusedCase& c) {
  absl::StatusOr<Trace> trace = Trace::Collect({c.output});
  if (!trace.ok()) return trace.status();
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
  if (!lowered.ok()) return lowered.status();
  return lowered->graph;
}

absl::StatusOr<double> TimeGraph(const ugraph::KernelGraph& graph, int reps) {
  std::shared_ptr<CudaExecutor> executor = GetCudaExecutor();
  if (!executor) return absl::UnavailableError("no GPU");
  absl::StatusOr<std::unique_ptr<GraphRunner>> runner = GraphRunner::Create(*executor, graph);
  if (!runner.ok()) return runner.status();
  return (*runner)->TimeMicroseconds(reps, 10);
}

search::SearchOptions Options(const search::FusedCase& c, const std::string& cache_dir, bool gpu) {
  search::SearchOptions options;
  options.budget_seconds = absl::GetFlag(FLAGS_budget);
  options.time_top = absl::GetFlag(FLAGS_time_top);
  options.cache_dir = cache_dir;
  if (gpu) {
    options.arch = GetCudaExecutor()->context().info().arch();
    options.time_graph = [](const ugraph::KernelGraph& g) { return TimeGraph(g, 10); };
    options.start_compile = [](const ugraph::KernelGraph& g) { return GetCudaExecutor()->CompileInBackground(g); };
    options.time_default = [&c]() -> absl::StatusOr<double> {
      absl::StatusOr<ugraph::KernelGraph> g = DefaultGraph(c);
      if (!g.ok()) return g.status();
      return TimeGraph(*g, 10);
    };
  }
  return options;
}

// Each kernel of `graph` the code generator emits, with its launch facts.
void PrintSources(const ugraph::KernelGraph& graph) {
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> s = codegen::GenerateKernel(graph, static_cast<int>(k));
    if (!s.ok()) {
      std::printf("// kernel %zu: no generated source (%s)\n", k, s.status().ToString().c_str());
      continue;
    }
    std::printf("// kernel %zu: %d threads, %lld bytes of dynamic shared memory, %lld workspace bytes per point\n%s",
                k, s->threads, static_cast<long long>(s->dynamic_shared_bytes),
                static_cast<long long>(s->workspace_bytes_per_point), s->source.c_str());
  }
}

std::string DefaultCacheDir() {
  const jit::CacheOptions cache = jit::CacheOptions::FromEnvironment();
  return cache.disk ? cache.directory : "";
}

}  // namespace

int RunSuperoptimize(const std::vector<std::string>& args) {
  const bool gpu = InitCuda().ok();
  if (!gpu) std::fprintf(stderr, "kiln superoptimize: no GPU (%s); the cost model alone chooses\n",
                         InitCuda().ToString().c_str());
  int failures = 0;
  for (const std::string& name : SelectedCases()) {
    absl::StatusOr<search::FusedCase> c = search::MakeFusedCase(name, gpu ? Device::Cuda() : Device::Cpu());
    if (!c.ok()) {
      std::fprintf(stderr, "kiln superoptimize: %s\n", c.status().ToString().c_str());
      return 2;
    }
    std::printf("== region %s\n%s", name.c_str(), c->region.ToString().c_str());
    absl::StatusOr<search::SearchResult> r = search::Superoptimize(c->region, Options(*c, DefaultCacheDir(), gpu));
    if (!r.ok()) {
      std::printf("search failed: %s\n", r.status().ToString().c_str());
      ++failures;
      continue;
    }
    std::printf("%s", r->report.ToString().c_str());
    if (absl::GetFlag(FLAGS_dot)) std::printf("%s", r->report.chosen_dot.c_str());
    if (absl::GetFlag(FLAGS_source) && r->graph) PrintSources(*r->graph);
  }
  // Compiles the search left running finish while everything they use is still alive.
  if (gpu) GetCudaExecutor()->StopCompiles();
  return failures == 0 ? 0 : 1;
}

int BenchFused() {
  if (absl::Status s = InitCuda(); !s.ok()) {
    std::fprintf(stderr, "kiln bench fused: needs a GPU: %s\n", s.ToString().c_str());
    return 1;
  }
  nlohmann::json out = nlohmann::json::object();
  std::printf("%-20s %9s %9s %9s %10s %9s  %s\n", "case", "ours_us", "default", "estimate", "cold_s", "warm_ms",
              "kernel");
  const std::string cache_dir = absl::StrCat(DefaultCacheDir().empty() ? "/tmp/kiln" : DefaultCacheDir(), "/bench-",
                                             std::chrono::steady_clock::now().time_since_epoch().count());
  for (const std::string& name : SelectedCases()) {
    absl::StatusOr<search::FusedCase> c = search::MakeFusedCase(name, Device::Cuda());
    if (!c.ok()) {
      std::fprintf(stderr, "kiln bench fused: %s\n", c.status().ToString().c_str());
      return 2;
    }
    // Cold: an empty cache (search, verify, compile, time). Warm: the cache
    // the cold run filled, as a second process would find it.
    absl::StatusOr<search::SearchResult> cold = search::Superoptimize(c->region, Options(*c, cache_dir, true));
    if (!cold.ok()) {
      std::fprintf(stderr, "kiln bench fused: %s: %s\n", name.c_str(), cold.status().ToString().c_str());
      return 1;
    }
    const auto warm_start = std::chrono::steady_clock::now();
    absl::StatusOr<search::SearchResult> warm = search::Superoptimize(c->region, Options(*c, cache_dir, true));
    const double warm_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_start).count();
    absl::StatusOr<ugraph::KernelGraph> fallback = DefaultGraph(*c);
    if (!fallback.ok()) return 1;
    const ugraph::KernelGraph& chosen = cold->graph ? *cold->graph : *fallback;
    absl::StatusOr<double> us = TimeGraph(chosen, 30);
    absl::StatusOr<double> default_us = TimeGraph(*fallback, 30);
    if (!us.ok() || !default_us.ok()) {
      std::fprintf(stderr, "kiln bench fused: %s: %s\n", name.c_str(),
                   (!us.ok() ? us.status() : default_us.status()).ToString().c_str());
      return 1;
    }
    std::printf("%-20s %9.2f %9.2f %9.2f %10.3f %9.2f  %s\n", name.c_str(), *us, *default_us,
                cold->report.estimated_us, cold->report.total_s, warm_ms,
                cold->graph ? "searched" : "default lowering");
    std::fprintf(stderr, "%s: %s", name.c_str(), cold->report.ToString().c_str());
    out[name] = {{"us", *us},
                 {"default_us", *default_us},
                 {"search_cold_s", cold->report.total_s},
                 {"search_warm_ms", warm_ms},
                 {"warm_from_cache", warm.ok() && warm->report.from_cache},
                 {"searched", cold->graph.has_value()}};
  }
  GetCudaExecutor()->StopCompiles();  // what the searches left compiling, finished before exit
  std::ofstream(absl::GetFlag(FLAGS_out)) << out.dump(2) << "\n";
  std::printf("wrote %s (python3 compare.py %s peers.json)\n", absl::GetFlag(FLAGS_out).c_str(),
              absl::GetFlag(FLAGS_out).c_str());
  return 0;
}

}  // namespace kiln::cli
