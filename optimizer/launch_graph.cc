#include "optimizer/launch_graph.h"

#include <algorithm>
#include <utility>


namespace kiln {
namespace {

bool SameDims(const jit::Dim3& a, const jit::Dim3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

bool SameShape(const PreparedLaunch& a, const PreparedLaunch& b) {
  return a.function == b.function && SameDims(a.config.block, b.config.block) &&
         a.config.dynamic_shared_bytes == b.config.dynamic_shared_bytes &&
         a.config.cooperative == b.config.cooperative && a.config.early == b.config.early &&
         SameDims(a.config.cluster, b.config.cluster) && a.params.size() == b.params.size();
}

}  // namespace

bool SameGraphShape(absl::Span<const PreparedLaunch> a, absl::Span<const PreparedLaunch> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameShape(a[i], b[i])) return false;
  }
  return true;
}

uint64_t GraphShapeHash(absl::Span<const PreparedLaunch> launches) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the words SameShape compares
  const auto add = [&h](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ull;
  };
  add(launches.size());
  for (const PreparedLaunch& l : launches) {
    const jit::LaunchConfig& c = l.config;
    add(reinterpret_cast<uintptr_t>(l.function));
    for (unsigned v : {c.block.x, c.block.y, c.block.z, c.dynamic_shared_bytes, c.cluster.x, c.cluster.y, c.cluster.z}) {
      add(v);
    }
    add((c.cooperative ? 1 : 0) | (c.early ? 2 : 0));
    add(l.params.size());
  }
  return h;
}

std::vector<int> ChangedLaunches(absl::Span<const PreparedLaunch> a, absl::Span<const PreparedLaunch> b) {
  std::vector<int> changed;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!SameDims(a[i].config.grid, b[i].config.grid) || a[i].params != b[i].params) {
      changed.push_back(static_cast<int>(i));
    }
  }
  return changed;
}

absl::StatusOr<LaunchGraphs::Graph> LaunchGraphs::Capture(jit::CudaContext& context, uint64_t shape,
                                                          const std::vector<PreparedLaunch>& launches) {
  std::vector<jit::CUgraphNode> nodes;
  absl::StatusOr<jit::CudaGraph> graph = context.CaptureGraph([&]() -> absl::Status {
    for (const PreparedLaunch& l : launches) {
      // The driver copies the parameter's bytes at the launch.
      void* args[] = {const_cast<uint64_t*>(l.params.data())};
      if (absl::Status s = context.Launch(*l.function, l.config, args); !s.ok()) return s;
      absl::StatusOr<jit::CUgraphNode> node = context.CapturedNode();
      if (!node.ok()) return node.status();
      nodes.push_back(*node);
    }
    return absl::OkStatus();
  });
  if (!graph.ok()) return graph.status();
  return Graph{shape, *std::move(graph), std::move(nodes), launches, 0};
}

absl::Status LaunchGraphs::Update(jit::CudaContext& context, Graph& graph,
                                  const std::vector<PreparedLaunch>& launches, LaunchGraphStats& stats) {
  for (int i : ChangedLaunches(graph.launches, launches)) {
    const PreparedLaunch& l = launches[i];
    if (absl::Status s = context.CheckLaunch(*l.function, l.config); !s.ok()) return s;
    void* args[] = {const_cast<uint64_t*>(l.params.data())};
    if (absl::Status s = graph.graph.SetKernelNode(graph.nodes[i], *l.function, l.config, args); !s.ok()) {
      return s;
    }
    ++stats.node_updates;
  }
  return absl::OkStatus();
}

absl::Status LaunchGraphs::Launch(jit::CudaContext& context, std::vector<PreparedLaunch>& launches,
                                  LaunchGraphStats& stats) {
  const uint64_t shape = GraphShapeHash(launches);
  auto found = std::find_if(graphs_.begin(), graphs_.end(), [&](const Graph& g) {
    return g.shape == shape && SameGraphShape(g.launches, launches);
  });
  absl::Status status;
  if (found != graphs_.end()) {
    status = Update(context, *found, launches, stats);
  } else {
    absl::StatusOr<Graph> graph = Capture(context, shape, launches);
    if (graph.ok()) {
      ++stats.captures;
      if (static_cast<int>(graphs_.size()) >= kMaxGraphs) {
        graphs_.erase(std::min_element(graphs_.begin(), graphs_.end(), [](const Graph& a, const Graph& b) {
          return a.last_used < b.last_used;
        }));
      }
      graphs_.push_back(*std::move(graph));
      found = graphs_.end() - 1;
    } else {
      status = graph.status();
    }
  }
  if (status.ok()) status = found->graph.Launch();
  if (!status.ok()) {
    // A node half updated, or a replay refused: trust none of them again.
    graphs_.clear();
    return status;
  }
  found->launches.swap(launches);
  found->last_used = ++clock_;
  ++stats.replays;
  return absl::OkStatus();
}

}  // namespace kiln
