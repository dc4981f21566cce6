#include "optimizer/search/superoptimize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "jit/cache_file.h"
#include "nlohmann/json.hpp"
#include "optimizer/search/abstract_check.h"
#include "optimizer/search/enumerate.h"
#include "optimizer/search/factor.h"
#include "optimizer/search/schedules.h"
#include "optimizer/search/verify.h"
#include "optimizer/ugraph_json.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/stable_hash.h"

namespace kiln::search {
namespace {

using Clock = std::chrono::steady_clock;
// 2: factored regions (factor.h) are searched too; 3: and their last
// product fused into the kernel before it (FuseRowProduct).
constexpr char kCacheFormat[] = "kiln-search-4";
constexpr size_t kMaxCacheBytes = 16 << 20;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// Joins a thread (if it runs) when it leaves scope.
struct JoinOnExit {
  std::thread& thread;
  ~JoinOnExit() {
    if (thread.joinable()) thread.join();
  }
};

// Runs f(i) for i in [0, n) on `threads` workers.
void ParallelFor(int n, int threads, const std::function<void(int)>& f) {
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  const int count = std::max(1, std::min(threads, n));
  for (int w = 0; w < count; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < n; i = next++) f(i);
    });
  }
  for (std::thread& t : workers) t.join();
}

// A graph to check and time: one candidate of the region, or one of each
// part of a factored region (factor.h), composed.
struct Ranked {
  std::vector<Candidate> parts;
  ugraph::KernelGraph graph;
  double estimate_us = 0;
  int64_t blocks = 0;  // launched, over the graph's kernels
  std::string schedule;
};

// The cost model's order. On a tie, fewer blocks first: less of each
// block's own work (its prologue, its share of a split's combine) done
// again. (qknorm_gqa_bs8's schedules tie at one estimate, split 4 to 16
// ways; on the H100 split 4 and its two-slab split 8 ran 42-47 us, split 16
// 80-87.)
bool ByEstimate(const Ranked& a, const Ranked& b) {
  return a.estimate_us != b.estimate_us ? a.estimate_us < b.estimate_us : a.blocks < b.blocks;
}

// Step 1 for one region: its mappings enumerated in parallel (each with its
// own expression pool and Z3 checker: pools are not shared between
// threads); the candidates that instantiate alike counted once.
std::vector<Candidate> EnumerateRegion(const Region& region, const EnumerateLimits& limits, int threads,
                                       SearchReport& report) {
  const std::vector<Schedule> mappings = Mappings(region);
  report.mappings += static_cast<int>(mappings.size());
  std::vector<std::vector<Candidate>> per_mapping(mappings.size());
  std::vector<EnumerateStats> stats(mappings.size());
  std::vector<AbstractCheckStats> z3(mappings.size());
  // Several mappings ask many of the same questions; one has no one to share with.
  SharedAnswers answers;
  SharedAnswers* const shared = mappings.size() > 1 ? &answers : nullptr;
  ParallelFor(static_cast<int>(mappings.size()), threads, [&](int m) {
    ExprPool pool;
    AbstractChecker checker(pool, AbstractCheckOptions{.shared = shared});
    stats[m] = EnumeratePrograms(region, mappings[m], pool, checker, limits, [&](const Candidate& c) {
      per_mapping[m].push_back(c);
      return true;
    });
    z3[m] = checker.stats();
  });
  std::vector<Candidate> found;
  std::set<std::string> fingerprints;
  for (size_t m = 0; m < mappings.size(); ++m) {
    for (Candidate& c : per_mapping[m]) {
      absl::StatusOr<ugraph::KernelGraph> g = Instantiate(region, c, region.class_size);
      if (g.ok() && !fingerprints.insert(ugraph::ToJson(*g)).second) {
        ++report.duplicates;
        continue;
      }
      found.push_back(std::move(c));
    }
    report.prefixes += stats[m].prefixes;
    report.invalid += stats[m].invalid;
    report.pruned += stats[m].pruned;
    report.complete += stats[m].complete;
    report.out_of_time |= stats[m].out_of_time;
    report.z3_queries += z3[m].queries;
    report.z3_cache_hits += z3[m].cache_hits + z3[m].shared_hits;
    report.z3_s += z3[m].z3_seconds;
  }
  return found;
}

// Step 2 for one region: every candidate verified over finite fields (in
// parallel), then each schedule variant of those that pass instantiated and
// estimated; the ones the code generator can emit, best first.
std::vector<Ranked> VerifyAndRank(const Region& region, const std::vector<Candidate>& found,
                                  const SearchOptions& options, int threads, SearchReport& report) {
  std::vector<char> ok(found.size(), 0);
  ParallelFor(static_cast<int>(found.size()), threads, [&](int i) {
    absl::StatusOr<bool> v = VerifyOverFiniteFields(region, found[i], options.verify_tests, options.seed + i);
    ok[i] = v.ok() && *v;
  });
  std::vector<Ranked> ranked;
  for (size_t i = 0; i < found.size(); ++i) {
    if (!ok[i]) {
      ++report.rejected;
      continue;
    }
    ++report.verified;
    for (const Schedule& s : ScheduleVariants(region, found[i].schedule)) {
      Candidate c = found[i];
      c.schedule = s;
      absl::StatusOr<ugraph::KernelGraph> g = Instantiate(region, c, region.class_size);
      if (!g.ok() || !ugraph::Validate(*g).ok()) continue;
      const double us = EstimateMicroseconds(*g);
      if (us >= kInfeasibleUs) continue;  // the code generator cannot emit it (shared memory, say)
      ++report.variants;
      const int64_t blocks = ugraph::LaunchedBlocks(*g);
      std::string schedule = s.ToString(region);
      ranked.push_back({{std::move(c)}, *std::move(g), us, blocks, std::move(schedule)});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), ByEstimate);
  return ranked;
}

// A candidate's checks before it is timed: verified again over finite
// fields (at its own tiles) and checked in floating point.
struct Checked {
  bool passed = false, float_failed = false;
  double error = -1;  // the float check's, -1 where it could not run
};
Checked CheckCandidate(const Region& region, const Candidate& candidate, const SearchOptions& options,
                       uint64_t field_seed, uint64_t float_seed) {
  absl::StatusOr<bool> v = VerifyOverFiniteFields(region, candidate, options.verify_tests, field_seed);
  absl::StatusOr<FloatCheck> f = CheckFloatingPoint(region, candidate, float_seed);
  return {v.ok() && *v && f.ok() && f->passed, f.ok() && !f->passed, f.ok() ? f->max_error : -1};
}

// The part whose best costs most by the cost model.
size_t CostliestPart(const std::vector<std::vector<Ranked>>& parts) {
  size_t widest = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (!parts[p].empty() && (parts[widest].empty() || parts[p][0].estimate_us > parts[widest][0].estimate_us)) {
      widest = p;
    }
  }
  return widest;
}

// With a GPU, the parts but the costliest are chosen by their own timings:
// the cost model tells their small kernels apart poorly. Of each one's
// first schedules, those that launch the most blocks are checked as the
// candidates are and timed alone (their compiles all under way at once);
// the fastest goes first, and the timings join the report's. (On an H100,
// MLA's q W_uk^T at one estimate ran 6.1 us in 16 blocks, 3.8 in 32, 2.7
// in 64 and 2.1 in 128 or 256: each block, alone on its SM, works through
// its share at a block's pace, not the SM's.)
void TimePartsAlone(const FactoredRegion& factored, std::vector<std::vector<Ranked>>& parts,
                    const SearchOptions& options, int threads, SearchReport& report) {
  constexpr size_t kLooked = 8, kTimed = 4;
  const size_t widest = CostliestPart(parts);
  // The costliest part's first two schedules (those of the composed graphs
  // timed first) compile meanwhile: they are its slowest compiles.
  if (options.start_compile) {
    std::set<std::string> started;
    for (size_t i = 0; i < parts[widest].size() && started.size() < 2; ++i) {
      if (started.insert(parts[widest][i].schedule).second) options.start_compile(parts[widest][i].graph);
    }
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    if (p == widest || parts[p].empty()) continue;
    const Region& part = factored.parts[p].region;
    std::vector<size_t> tried;
    std::set<std::string> schedules;
    for (size_t i = 0; i < parts[p].size() && tried.size() < kLooked; ++i) {
      if (schedules.insert(parts[p][i].schedule).second) tried.push_back(i);
    }
    std::stable_sort(tried.begin(), tried.end(),
                     [&](size_t a, size_t b) { return parts[p][a].blocks > parts[p][b].blocks; });
    if (tried.size() > kTimed) tried.resize(kTimed);
    std::vector<std::shared_future<void>> compiling;
    for (size_t i : tried) {
      if (options.start_compile) compiling.push_back(options.start_compile(parts[p][i].graph));
    }
    std::vector<char> passed(tried.size(), 0);
    ParallelFor(static_cast<int>(tried.size()), threads, [&](int t) {
      passed[t] =
          CheckCandidate(part, parts[p][tried[t]].parts[0], options, options.seed ^ (0x51 + t), options.seed + 11 * t)
              .passed;
    });
    std::optional<size_t> fastest;
    double fastest_us = 0;
    for (size_t t = 0; t < tried.size(); ++t) {
      if (!passed[t]) continue;
      if (t < compiling.size()) compiling[t].wait();
      Ranked& r = parts[p][tried[t]];
      absl::StatusOr<double> us = options.time_graph(r.graph);
      ++report.timed;
      if (!us.ok()) {
        ++report.time_failed;
        continue;
      }
      report.timings.push_back({absl::StrCat("part ", p, " alone: ", r.schedule), r.estimate_us, *us});
      if (!fastest || *us < fastest_us) {
        fastest = tried[t];
        fastest_us = *us;
      }
    }
    if (fastest && *fastest > 0) std::swap(parts[p][0], parts[p][*fastest]);
  }
}

// The factored region's graphs: each part's first (by the cost model, or
// its timings alone), but the costliest part's, whose first few schedules
// are each tried.
std::vector<Ranked> RankFactored(const FactoredRegion& factored, const std::vector<std::vector<Ranked>>& parts,
                                 const Region& region) {
  constexpr size_t kTried = 8;
  for (const std::vector<Ranked>& part : parts) {
    if (part.empty()) return {};
  }
  const size_t widest = CostliestPart(parts);
  std::vector<Ranked> out;
  std::set<std::string> schedules;
  for (const Ranked& choice : parts[widest]) {
    if (schedules.size() == kTried) break;
    if (!schedules.insert(choice.schedule).second) continue;
    Ranked r;
    std::vector<ugraph::KernelGraph> graphs;
    for (size_t p = 0; p < parts.size(); ++p) {
      const Ranked& pick = p == widest ? choice : parts[p][0];
      r.parts.push_back(pick.parts[0]);
      graphs.push_back(pick.graph);
      absl::StrAppend(&r.schedule, p ? " | " : "factored: ", pick.schedule);
    }
    absl::StatusOr<ugraph::KernelGraph> g = ComposeParts(region, factored, graphs);
    // The same parts with the last product in the middle part's kernel,
    // where it can take it (FuseRowProduct): ranked beside them.
    if (std::optional<ugraph::KernelGraph> fused = FuseRowProduct(region, factored, graphs)) {
      Ranked f = r;
      absl::StrAppend(&f.schedule, " (last product fused)");
      f.estimate_us = EstimateMicroseconds(*fused);
      f.blocks = ugraph::LaunchedBlocks(*fused);
      f.graph = *std::move(fused);
      if (f.estimate_us < kInfeasibleUs) out.push_back(std::move(f));
    }
    if (!g.ok() || !ugraph::Validate(*g).ok()) continue;
    r.estimate_us = EstimateMicroseconds(*g);
    if (r.estimate_us >= kInfeasibleUs) continue;
    r.blocks = ugraph::LaunchedBlocks(*g);
    r.graph = *std::move(g);
    out.push_back(std::move(r));
  }
  return out;
}

// `seconds` after `t`.
Clock::time_point After(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

absl::StatusOr<SearchResult> FromCache(const std::string& path) {
  absl::StatusOr<std::string> text = jit::ReadWholeFile(path, kMaxCacheBytes);
  if (!text.ok()) return text.status();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kCacheFormat) {
    return absl::DataLossError(absl::StrCat("search cache entry ", path, " is unreadable"));
  }
  SearchResult result;
  result.report.from_cache = true;
  if (j.contains("graph") && j["graph"].is_string()) {
    absl::StatusOr<ugraph::KernelGraph> graph = ugraph::FromJson(j["graph"].get<std::string>());
    if (!graph.ok()) return absl::DataLossError(absl::StrCat("search cache entry ", path, ": ", graph.status().message()));
    if (absl::Status s = ugraph::Validate(*graph); !s.ok()) {
      return absl::DataLossError(absl::StrCat("search cache entry ", path, ": ", s.message()));
    }
    result.report.chosen_text = ugraph::ToText(*graph);
    result.report.chosen_dot = ugraph::ToDot(*graph);
    result.graph = *std::move(graph);
  }
  return result;
}

void ToCache(const std::string& path, const SearchResult& result) {
  nlohmann::json j = {{"format", kCacheFormat}};
  if (result.graph) j["graph"] = ugraph::ToJson(*result.graph);
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos) (void)jit::CreateDirectories(path.substr(0, slash));
  (void)jit::WriteFileAtomically(path, j.dump(), /*fsync=*/false);  // a lost entry costs a search
}

}  // namespace

std::string CachePath(const Region& region, const SearchOptions& options) {
  StableHasher h;
  h.Add(absl::string_view(kCacheFormat)).Add(absl::string_view(region.ToString()));
  for (DType d : region.input_dtypes) h.Add(absl::string_view(DTypeName(d)));
  for (const std::vector<int>& layout : region.input_layouts) {
    h.Add(static_cast<int64_t>(layout.size()));
    for (int axis : layout) h.Add(axis);
  }
  h.Add(absl::string_view(DTypeName(region.output_dtype))).Add(absl::string_view(options.arch));
  h.Add(options.max_loop_ops).Add(options.max_post_ops).Add(options.budget_seconds);
  // How many are timed, in which forms, and how often, decides the choice.
  h.Add(options.time_top).Add(options.time_rounds).Add(options.one_point_forms);
  return absl::StrCat(options.cache_dir, "/search/", h.Finish().ToHex(), ".json");
}

std::string SearchReport::ToString() const {
  std::string out;
  if (from_cache) {
    absl::StrAppend(&out, "from the search cache (no search, verification or timing)\n");
  } else {
    absl::StrAppend(&out, "mappings ", mappings, "; prefixes ", prefixes, " (invalid ", invalid, ", pruned ", pruned,
                    "); complete ", complete, " (duplicates ", duplicates, "); verified ", verified, ", rejected ",
                    rejected, " (float ", float_rejected, "); schedule variants ", variants,
                    factored ? absl::StrCat(" (factored into kernels: ", factored, ")") : "", "; timed ", timed,
                    time_failed ? absl::StrCat(" (", time_failed, " failed: ", time_error, ")") : "",
                    compile_late ? absl::StrCat("; ", compile_late, " still compiling at the budget's end") : "",
                    out_of_time ? "; OUT OF TIME" : "", "\n");
    absl::StrAppend(&out, "time: search ", search_s * 1e3, " ms, verify ", verify_s * 1e3, " ms, compile+time ",
                    time_s * 1e3, " ms (waiting for compiles ", compile_wait_s * 1e3, " ms, for the default lowering ",
                    default_wait_s * 1e3, " ms), total ", total_s * 1e3, " ms; z3 queries ", z3_queries,
                    " (cache hits ", z3_cache_hits, "), in z3 ", z3_s * 1e3, " ms\n");
    for (const TimedCandidate& t : timings) {
      absl::StrAppend(&out, "  timed ", t.schedule, ": estimated ", t.estimated_us, " us, measured ", t.measured_us,
                      " us", t.one_point_us ? absl::StrCat(", one grid point a block ", *t.one_point_us, " us") : "",
                      "\n");
    }
  }
  if (chosen_text.empty()) {
    absl::StrAppend(&out, "chosen: the default lowering\n");
  } else if (from_cache) {
    absl::StrAppend(&out, "chosen (as cached):\n", chosen_text);
  } else {
    absl::StrAppend(&out, "chosen", schedule.empty() ? "" : absl::StrCat(" (", schedule, ")"), ": estimated ",
                    estimated_us, " us");
    if (measured_us) absl::StrAppend(&out, ", measured ", *measured_us, " us");
    if (default_us) absl::StrAppend(&out, ", default lowering ", *default_us, " us");
    absl::StrAppend(&out, ", float error ", float_error, "\n", chosen_text);
  }
  return out;
}

absl::StatusOr<SearchResult> Superoptimize(const Region& region, const SearchOptions& options) {
  const Clock::time_point start = Clock::now();
  const std::string cache_path = options.cache_dir.empty() ? "" : CachePath(region, options);
  if (!cache_path.empty()) {
    absl::StatusOr<SearchResult> cached = FromCache(cache_path);
    if (cached.ok()) {
      cached->report.total_s = Seconds(start);
      return cached;
    }
  }
  SearchResult result;
  SearchReport& report = result.report;
  const int threads = options.threads > 0 ? options.threads
                                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  // 1. Enumerate: a factored region's parts first (each small; they take
  // milliseconds), then the region itself.
  EnumerateLimits limits;
  limits.max_loop_ops = options.max_loop_ops;
  limits.max_post_ops = options.max_post_ops;
  // Enumeration gets the budget less 0.6 s kept for verifying,
  // compiling and timing (at least half of it).
  const double enumerate_s = std::max(options.budget_seconds * 0.5, options.budget_seconds - 0.6);
  limits.deadline = After(start, enumerate_s);
  std::optional<FactoredRegion> factored = FactorProducts(region);
  if (factored) {
    absl::StatusOr<bool> holds = VerifyFactoring(region, *factored, options.verify_tests, options.seed);
    if (!holds.ok() || !*holds) factored.reset();
  }
  std::vector<std::vector<Candidate>> part_found;
  if (factored) {
    for (const RegionPart& part : factored->parts) {
      part_found.push_back(EnumerateRegion(part.region, limits, threads, report));
    }
  }
  const std::vector<Candidate> found = EnumerateRegion(region, limits, threads, report);
  // The default lowering is timed on a thread of its own once the
  // enumeration (which has a deadline) is done, so that compiling its
  // kernels (0.5-1 s of NVRTC on a first call) overlaps the checks below.
  // Nothing else here touches the GPU before the first candidate is timed,
  // and the thread is joined before that: no two timings share the GPU.
  std::optional<absl::StatusOr<double>> default_us;
  std::thread default_timer;
  if (options.time_default) default_timer = std::thread([&] { default_us = options.time_default(); });
  const JoinOnExit join_default_timer{default_timer};
  report.search_s = Seconds(start);

  // 2. Verify every program over finite fields, and rank the variants of
  // those that pass; a factored region's composed graphs among them.
  const Clock::time_point verify_start = Clock::now();
  std::vector<Ranked> ranked = VerifyAndRank(region, found, options, threads, report);
  if (factored) {
    std::vector<std::vector<Ranked>> parts;
    for (size_t p = 0; p < factored->parts.size(); ++p) {
      parts.push_back(VerifyAndRank(factored->parts[p].region, part_found[p], options, threads, report));
    }
    if (options.time_graph) {
      // No two timings share the GPU: the default lowering's ends first.
      const Clock::time_point wait_start = Clock::now();
      if (default_timer.joinable()) default_timer.join();
      report.default_wait_s += Seconds(wait_start);
      TimePartsAlone(*factored, parts, options, threads, report);
    }
    std::vector<Ranked> composed = RankFactored(*factored, parts, region);
    report.factored = static_cast<int64_t>(composed.size());
    for (Ranked& r : composed) ranked.push_back(std::move(r));
    std::stable_sort(ranked.begin(), ranked.end(), ByEstimate);
  }
  // Programs that differ only in op order mostly run alike: the best of
  // each schedule goes first, so that the candidates checked and timed
  // below differ in their schedules.
  {
    std::vector<Ranked> first, rest;
    std::set<std::string> schedules;
    for (Ranked& r : ranked) (schedules.insert(r.schedule).second ? first : rest).push_back(std::move(r));
    ranked = std::move(first);
    for (Ranked& r : rest) ranked.push_back(std::move(r));
  }
  // The cost model has not been fitted to graphs of several kernels: the
  // best of each form is timed first, composed with its last product fused
  // (FuseRowProduct), composed, and one kernel (their compiles submitted
  // first, so that a budget that runs out in the compiles leaves them
  // timed: MLA's single kernels take 2-4 s of NVRTC). The fused graphs,
  // which the cost model puts first, would otherwise take every place.
  const int wanted = options.time_graph ? options.time_top : 1;
  if (options.time_graph) {
    const auto form = [](const Ranked& r) {
      return r.parts.size() < 2 ? 2 : r.graph.kernels.size() < r.parts.size() ? 0 : 1;
    };
    size_t placed = 0;
    for (int f = 0; f < 3 && static_cast<int>(placed) < wanted; ++f) {
      for (size_t i = placed; i < ranked.size(); ++i) {
        if (form(ranked[i]) != f) continue;
        const auto at = [&](size_t k) { return ranked.begin() + static_cast<std::ptrdiff_t>(k); };
        std::rotate(at(placed), at(i), at(i) + 1);
        ++placed;
        break;
      }
    }
  }
  // The region each of a graph's candidates was found for.
  const auto part_region = [&](const Ranked& r, size_t p) -> const Region& {
    return r.parts.size() > 1 ? factored->parts[p].region : region;
  };

  // 3. The best few, in the cost model's order: verified again at their own
  // tiles, checked in floating point, timed on the GPU where there is one.
  // They are checked a batch at a time, as many at once as are still wanted
  // (one without a GPU): one that fails, or that the GPU cannot compile or
  // launch, gives way to the next, up to three times as many as are wanted.
  const int top = std::min<int>(static_cast<int>(ranked.size()), 3 * wanted);
  std::vector<char> passed(top, 0);
  std::vector<double> errors(top, 0);
  std::vector<char> float_failed(top, 0);
  int best = -1;
  std::optional<double> best_us;
  // The budget's end: compiles not done by then are not waited for, once
  // one candidate is timed (a region's kernels differ in compile time by
  // 10x: 0.4-5 s of NVRTC for attention's).
  const Clock::time_point deadline = After(start, options.budget_seconds);
  // The first candidates that passed and run, each timed once; then again
  // in further rounds in turn: a candidate's time is its best round, so one
  // that happened to run while the GPU's clocks were still rising is not
  // judged on that run.
  std::vector<int> timed;
  std::vector<double> measured;
  double time_s = 0;
  // By candidate: its one-point form (OnePointForm), compiled beside it.
  std::vector<std::optional<ugraph::KernelGraph>> one_point(top);
  std::vector<std::shared_future<void>> one_point_compiling(top);
  for (int next = 0; next < top && best < 0 && static_cast<int>(timed.size()) < wanted;) {
    if (!timed.empty() && Clock::now() >= deadline) {
      report.out_of_time = true;
      break;
    }
    const int batch = std::min(top - next, wanted - static_cast<int>(timed.size()));
    // The batch compiles while it is checked (NVRTC and the checks both on
    // the CPU; one that fails is rare, and its compile is all that is lost).
    std::vector<std::shared_future<void>> compiling(batch);
    if (options.time_graph && options.start_compile) {
      for (int b = 0; b < batch; ++b) compiling[b] = options.start_compile(ranked[next + b].graph);
      for (int b = 0; b < batch && options.one_point_forms > 0; ++b) {
        one_point[next + b] = ugraph::OnePointForm(ranked[next + b].graph);
        if (one_point[next + b]) one_point_compiling[next + b] = options.start_compile(*one_point[next + b]);
      }
    }
    ParallelFor(batch, threads, [&](int b) {
      const int i = next + b;
      // Each candidate verified again at its own tiles, and checked in floating point.
      bool pass = true, float_fail = false;
      double error = 0;
      for (size_t p = 0; p < ranked[i].parts.size() && pass; ++p) {
        const Region& part = part_region(ranked[i], p);
        const Checked c = CheckCandidate(part, ranked[i].parts[p], options, options.seed ^ (0x9e37 + i + (p << 20)),
                                         options.seed + 7 * i + p);
        pass = c.passed;
        float_fail = c.float_failed;
        error = c.error < 0 ? -1 : std::max(error, c.error);
      }
      passed[i] = pass;
      errors[i] = error;
      float_failed[i] = float_fail;
    });
    const Clock::time_point time_start = Clock::now();
    if (default_timer.joinable()) default_timer.join();
    report.default_wait_s += Seconds(time_start);
    std::vector<int> waiting;  // by b, in the cost model's order
    for (int b = 0; b < batch; ++b) {
      report.float_rejected += float_failed[next + b];
      if (passed[next + b] && best < 0) waiting.push_back(b);
    }
    if (!options.time_graph && !waiting.empty()) best = next + waiting[0];
    // Each candidate is timed once its compile is done, the first done
    // first: a slow compile holds up no other's timing.
    while (options.time_graph && !waiting.empty()) {
      const auto ready = std::find_if(waiting.begin(), waiting.end(), [&](int b) {
        return !compiling[b].valid() || compiling[b].wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      });
      if (ready == waiting.end()) {
        if (!timed.empty() && Clock::now() >= deadline) {
          report.compile_late += static_cast<int64_t>(waiting.size());
          break;
        }
        const Clock::time_point wait_start = Clock::now();
        compiling[waiting.front()].wait_for(std::chrono::milliseconds(2));
        report.compile_wait_s += Seconds(wait_start);
        continue;
      }
      const int i = next + *ready;
      waiting.erase(ready);
      absl::StatusOr<double> us = options.time_graph(ranked[i].graph);
      ++report.timed;
      if (!us.ok()) {
        ++report.time_failed;
        if (report.time_error.empty()) report.time_error = std::string(us.status().message());
        continue;
      }
      timed.push_back(i);
      measured.push_back(*us);
    }
    next += batch;
    time_s += Seconds(time_start);
  }
  report.verify_s = Seconds(verify_start) - time_s;
  const Clock::time_point time_start = Clock::now();
  for (int round = 1; round < options.time_rounds; ++round) {
    for (size_t j = 0; j < timed.size(); ++j) {
      absl::StatusOr<double> us = options.time_graph(ranked[timed[j]].graph);
      if (us.ok()) measured[j] = std::min(measured[j], *us);
    }
  }
  // 4. The fastest few again in their one-point form, in rounds as above.
  // The cost model cannot tell the forms apart, and which runs faster
  // differs by kernel (ugraph.h, one_point_blocks).
  std::vector<std::optional<double>> one_point_us(timed.size());
  {
    std::vector<size_t> fastest(timed.size());
    for (size_t j = 0; j < fastest.size(); ++j) fastest[j] = j;
    std::stable_sort(fastest.begin(), fastest.end(), [&](size_t a, size_t b) { return measured[a] < measured[b]; });
    fastest.resize(std::min<size_t>(fastest.size(), std::max(options.one_point_forms, 0)));
    for (const size_t j : fastest) {
      if (!options.start_compile) one_point[timed[j]] = ugraph::OnePointForm(ranked[timed[j]].graph);
    }
    for (int round = 0; round < options.time_rounds; ++round) {
      for (const size_t j : fastest) {
        const int i = timed[j];
        if (!one_point[i] || (round > 0 && !one_point_us[j])) continue;  // none, or it failed
        if (one_point_compiling[i].valid()) one_point_compiling[i].wait();
        absl::StatusOr<double> us = options.time_graph(*one_point[i]);
        if (!us.ok()) {
          ++report.time_failed;
          if (report.time_error.empty()) report.time_error = std::string(us.status().message());
          continue;
        }
        one_point_us[j] = std::min(one_point_us[j].value_or(*us), *us);
      }
    }
  }
  // Timed as their compiles were done; reported in the cost model's order.
  std::vector<size_t> order(timed.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return timed[a] < timed[b]; });
  bool best_one_point = false;
  for (const size_t j : order) {
    const Ranked& r = ranked[timed[j]];
    report.timings.push_back({r.schedule, r.estimate_us, measured[j], one_point_us[j]});
    const bool faster_one_point = one_point_us[j] && *one_point_us[j] < measured[j];
    const double us = faster_one_point ? *one_point_us[j] : measured[j];
    if (!best_us || us < *best_us) {
      best = timed[j];
      best_us = us;
      best_one_point = faster_one_point;
    }
  }
  if (best_one_point) {
    ranked[best].graph = std::move(*one_point[best]);
    absl::StrAppend(&ranked[best].schedule, " one grid point a block");
  }
  if (default_timer.joinable()) default_timer.join();
  if (default_us && default_us->ok()) report.default_us = **default_us;
  report.time_s = time_s + Seconds(time_start);
  if (best >= 0 && !(best_us && report.default_us && *best_us >= *report.default_us)) {
    if (ranked[best].parts.size() == 1) {
      result.candidate = ranked[best].parts[0];
    } else {
      result.parts = ranked[best].parts;
    }
    result.graph = ranked[best].graph;
    report.estimated_us = ranked[best].estimate_us;
    report.measured_us = best_us;
    report.float_error = errors[best];
    report.schedule = ranked[best].schedule;
    report.chosen_text = ugraph::ToText(*result.graph);
    report.chosen_dot = ugraph::ToDot(*result.graph);
  }
  report.total_s = Seconds(start);
  // Cached also when the budget ran out (the cache key includes the
  // search limits): a first call pays for the search once, not per process.
  if (!cache_path.empty()) ToCache(cache_path, result);
  return result;
}

}  // namespace kiln::search
