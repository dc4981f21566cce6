#include "optimizer/search_trace.h"

#include <cstdio>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ops/ops.h"
#include "optimizer/graph_runner.h"
#include "optimizer/partition.h"

namespace kiln {
namespace {

// Regions with more matmuls and reductions than this are not searched: the
// pruning hands Z3 the region's whole expression, and past this size Z3's
// setup alone can take minutes and gigabytes, beyond any budget (seen: a
// layer's tail, four products and two norms, 32 ops). The cases the search
// is for have up to five (MLA's four products and a softmax's sum, QK-norm
// attention's two products and three sums).
constexpr int kMaxAnchors = 5;

int Anchors(const search::Region& region) {
  int n = 0;
  for (const search::RegionOp& op : region.ops) {
    n += op.kind == search::RegionOp::Kind::kMatmul || op.kind == search::RegionOp::Kind::kReduce;
  }
  return n;
}

// A region input the lowering can read: a buffer, or a view of one (a value
// computed outside the region gets a buffer under its views; one the
// partition recomputes where it is read, such as a source, has none).
// A dequantized weight is not: the search has no algebra for dequantize
// yet, so a region taking one as an input would store the weight unpacked
// each run, where the default lowering decodes it inside its products.
bool Readable(const Node* in, const absl::flat_hash_set<const Node*>& inside) {
  const Node* base = lowering::ThroughViews(in);
  if (!base->is_realized() && base->op == OpKind::kDequantize) return false;
  return base->is_realized() || (!lowering::RecomputedWhereRead(base) && !inside.contains(base));
}

// Each symbol of the region's sizes at its largest value.
Bindings LargestBindings(const search::Region& region) {
  Bindings bindings;
  for (const Dim& d : region.class_size) {
    for (const Dim::Term& t : d.terms()) bindings.Set(Symbol(t.symbol->name, t.symbol->max_value), t.symbol->max_value);
  }
  return bindings;
}

absl::StatusOr<double> TimeGraph(CudaExecutor& executor, const ugraph::KernelGraph& graph, const Bindings& bindings) {
  absl::StatusOr<std::unique_ptr<GraphRunner>> runner = GraphRunner::Create(executor, graph, bindings);
  if (!runner.ok()) return runner.status();
  return (*runner)->TimeMicroseconds(10, 10);
}

// The region under the default lowering, on zero-filled GPU inputs laid
// out as the region's are.
absl::StatusOr<double> TimeDefault(CudaExecutor& executor, const search::Region& region, const Bindings& bindings) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const Node* in = region.inputs[i];
    absl::StatusOr<Extents> sizes = in->shape.Evaluate(bindings);
    if (!sizes.ok()) return sizes.status();
    const std::vector<int>& layout = region.input_layouts[i];
    Shape stored;
    std::vector<int> to_logical(layout.size());
    for (size_t k = 0; k < layout.size(); ++k) {
      stored.push_back((*sizes)[layout[k]]);
      to_logical[layout[k]] = static_cast<int>(k);
    }
    Tensor t = to(zeros(layout.empty() ? Shape::FromExtents(*sizes) : stored, in->dtype), Device::Cuda());
    if (absl::Status s = t.realize(); !s.ok()) return s;
    inputs.push_back(layout.empty() ? std::move(t) : permute(t, to_logical));
  }
  Tensor out = search::ReplayRegion(region, inputs);
  absl::StatusOr<Trace> trace = Trace::Collect({out});
  if (!trace.ok()) return trace.status();
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
  if (!lowered.ok()) return lowered.status();
  return TimeGraph(executor, lowered->graph, bindings);
}

}  // namespace

std::vector<lowering::FusedRegion> FuseTraceRegions(const Trace& trace, const RegionSearchFn& search) {
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
    // A view is no region's end: its producer's region is searched, and
    // the lowering reads the result through the view.
    if (root->is_realized() || claimed.contains(root) || IsView(root->op)) continue;
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
      if (!region.ok()) continue;
      if (const int anchors = Anchors(*region); anchors < 2 || anchors > kMaxAnchors) continue;
      if (chosen_region && region->nodes.size() == chosen_region->nodes.size()) continue;  // the same region
      const absl::flat_hash_set<const Node*> inside(region->nodes.begin(), region->nodes.end());
      bool inputs_ok = true;
      for (const Node* in : region->inputs) inputs_ok &= Readable(in, inside);
      if (!inputs_ok) continue;
      std::optional<ugraph::KernelGraph> graph = search(*region);
      chosen_region = *std::move(region);
      if (graph) chosen_graph = *std::move(graph);
    }
    if (!chosen_graph) continue;
    const search::Region* region = &*chosen_region;
    for (const Node* n : region->nodes) claimed.insert(n);
    fused.push_back({root, region->inputs, region->nodes, *std::move(chosen_graph)});
  }
  return fused;
}

std::vector<lowering::FusedRegion> SearchTrace(const Trace& trace, CudaExecutor& executor,
                                               const TraceSearchOptions& options) {
  return FuseTraceRegions(trace, [&](const search::Region& r) -> std::optional<ugraph::KernelGraph> {
    if (r.output->device.type != DeviceType::kCuda) return std::nullopt;
    const Bindings bindings = LargestBindings(r);
    search::SearchOptions opts = options.search;
    opts.arch = executor.context().info().arch();
    opts.time_graph = [&](const ugraph::KernelGraph& g) { return TimeGraph(executor, g, bindings); };
    opts.start_compile = [&](const ugraph::KernelGraph& g) { return executor.CompileInBackground(g); };
    opts.time_default = [&]() { return TimeDefault(executor, r, bindings); };
    absl::StatusOr<search::SearchResult> result = search::Superoptimize(r, opts);
    if (options.log) {
      std::fprintf(stderr, "kiln search: region of %zu ops ending in %s %s\n%s", r.ops.size(),
                   std::string(OpName(r.output->op)).c_str(), r.output->shape.ToString().c_str(),
                   result.ok() ? result->report.ToString().c_str() : result.status().ToString().c_str());
    }
    if (!result.ok() || !result->graph) return std::nullopt;
    return *std::move(result->graph);
  });
}

void EnableSuperoptimizer(CudaExecutor& executor, TraceSearchOptions options) {
  executor.set_region_search(
      [&executor, options](const Trace& trace) { return SearchTrace(trace, executor, options); });
}

}  // namespace kiln
