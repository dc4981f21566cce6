#include "optimizer/search_trace.h"

#include <cstdio>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ops/ops.h"
#include "optimizer/graph_runner.h"

namespace kiln {
namespace {

int Anchors(const search::Region& region) {
  int n = 0;
  for (const search::RegionOp& op : region.ops) {
    n += op.kind == search::RegionOp::Kind::kMatmul || op.kind == search::RegionOp::Kind::kReduce;
  }
  return n;
}

bool Concrete(const search::Region& region) {
  for (const Dim& d : region.class_size) {
    if (!d.is_concrete()) return false;
  }
  return true;
}

absl::StatusOr<double> TimeGraph(CudaExecutor& executor, const ugraph::KernelGraph& graph) {
  absl::StatusOr<std::unique_ptr<GraphRunner>> runner = GraphRunner::Create(executor, graph);
  if (!runner.ok()) return runner.status();
  return (*runner)->TimeMicroseconds(10, 10);
}

// The region under the default lowering, on zero-filled GPU inputs.
absl::StatusOr<double> TimeDefault(CudaExecutor& executor, const search::Region& region) {
  std::vector<Tensor> inputs;
  for (const Node* in : region.inputs) {
    Tensor t = to(zeros(in->shape, in->dtype), Device::Cuda());
    if (absl::Status s = t.realize(); !s.ok()) return s;
    inputs.push_back(std::move(t));
  }
  Tensor out = search::ReplayRegion(region, inputs);
  absl::StatusOr<Trace> trace = Trace::Collect({out});
  if (!trace.ok()) return trace.status();
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
  if (!lowered.ok()) return lowered.status();
  return TimeGraph(executor, lowered->graph);
}

}  // namespace

std::vector<lowering::FusedRegion> SearchTrace(const Trace& trace, CudaExecutor& executor,
                                               const TraceSearchOptions& options) {
  absl::flat_hash_map<const Node*, std::vector<const Node*>> consumers;
  for (const Node* n : trace.nodes()) {
    if (n->is_realized()) continue;
    for (const auto& in : n->inputs) consumers[in.get()].push_back(n);
  }
  const absl::flat_hash_set<const Node*> outputs(trace.outputs().begin(), trace.outputs().end());
  absl::flat_hash_set<const Node*> claimed;
  std::vector<lowering::FusedRegion> fused;
  const std::vector<Node*>& nodes = trace.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* root = *it;
    if (root->is_realized() || claimed.contains(root) || root->device.type != DeviceType::kCuda) continue;
    // Two tries: the largest region whose values nobody outside reads (the
    // boundary grows until none is), then, if its search finds nothing, the
    // region of single-use values (smaller, easier to search).
    std::optional<search::Region> chosen_region;
    std::optional<ugraph::KernelGraph> chosen_graph;
    for (int attempt = 0; attempt < 2 && !chosen_graph; ++attempt) {
      absl::flat_hash_set<const Node*> kept;
      auto boundary = [&](const Node* m) {
        return m->is_realized() || outputs.contains(m) || claimed.contains(m) || kept.contains(m) ||
               (attempt == 1 && consumers[m].size() != 1);
      };
      absl::StatusOr<search::Region> region = search::ExtractRegion(root, boundary);
      for (int round = 0; region.ok() && round < 64; ++round) {
        const absl::flat_hash_set<const Node*> inside(region->nodes.begin(), region->nodes.end());
        const size_t before = kept.size();
        for (const Node* n : region->nodes) {
          if (n == root) continue;
          for (const Node* c : consumers[n]) {
            if (!inside.contains(c)) kept.insert(n);
          }
        }
        if (kept.size() == before) break;
        region = search::ExtractRegion(root, boundary);
      }
      if (!region.ok() || Anchors(*region) < 2 || !Concrete(*region)) continue;
      if (chosen_region && region->nodes.size() == chosen_region->nodes.size()) continue;  // the same region
      bool inputs_ok = true;
      for (const Node* in : region->inputs) {
        inputs_ok &= in->is_realized() || (!IsView(in->op) && !IsSource(in->op));
      }
      if (!inputs_ok) continue;
      search::SearchOptions opts = options.search;
      opts.arch = executor.context().info().arch();
      opts.time_graph = [&](const ugraph::KernelGraph& g) { return TimeGraph(executor, g); };
      opts.precompile = [&](const std::vector<const ugraph::KernelGraph*>& g) { executor.Precompile(g); };
      const search::Region& r = *region;
      opts.time_default = [&]() { return TimeDefault(executor, r); };
      absl::StatusOr<search::SearchResult> result = search::Superoptimize(r, opts);
      if (options.log) {
        std::fprintf(stderr, "kiln search: region of %zu ops ending in %s %s\n%s", r.ops.size(),
                     std::string(OpName(root->op)).c_str(), root->shape.ToString().c_str(),
                     result.ok() ? result->report.ToString().c_str() : result.status().ToString().c_str());
      }
      chosen_region = *std::move(region);
      if (result.ok() && result->graph) chosen_graph = *std::move(result->graph);
    }
    if (!chosen_graph) continue;
    const search::Region* region = &*chosen_region;
    for (const Node* n : region->nodes) claimed.insert(n);
    fused.push_back({root, region->inputs, region->nodes, *std::move(chosen_graph)});
  }
  return fused;
}

void EnableSuperoptimizer(CudaExecutor& executor, TraceSearchOptions options) {
  executor.set_region_search(
      [&executor, options](const Trace& trace) { return SearchTrace(trace, executor, options); });
}

}  // namespace kiln
