// Replaying a trace's kernel launches from CUDA graphs. A decode step's
// trace has the same structure every token: the same kernels with the same
// block sizes, only some pointers, symbol values (the position, the KV
// length) and grids differ. The first time a plan's launches take a shape
// they are captured as a graph; later runs update only the kernel nodes
// whose function, grid or parameters changed and replay the graph with one
// launch, instead of the host queuing every kernel again.
#ifndef KILN_OPTIMIZER_LAUNCH_GRAPH_H_
#define KILN_OPTIMIZER_LAUNCH_GRAPH_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jit/cuda_context.h"
#include "jit/cuda_graph.h"

namespace kiln {

// A kernel launch computed but not queued.
struct PreparedLaunch {
  jit::CudaFunction* function = nullptr;
  jit::LaunchConfig config;
  std::vector<uint64_t> params;  // the kernel's one parameter, in 8-byte words
  int kernel = -1;               // its kernel's index in the compiled graph
};

// Whether `b` can replay a graph captured from `a`: as many launches and,
// launch by launch, the same function, block, dynamic shared memory,
// cooperative, early and cluster (what updating a kernel node cannot change,
// or kiln does not).
bool SameGraphShape(absl::Span<const PreparedLaunch> a, absl::Span<const PreparedLaunch> b);
// A hash of what SameGraphShape compares.
uint64_t GraphShapeHash(absl::Span<const PreparedLaunch> launches);
// The launches of `b` (the same shape as `a`) whose grid or parameters
// differ from `a`'s.
std::vector<int> ChangedLaunches(absl::Span<const PreparedLaunch> a, absl::Span<const PreparedLaunch> b);

struct LaunchGraphStats {
  int64_t captures = 0;      // graphs captured and instantiated
  int64_t replays = 0;       // graph launches
  int64_t node_updates = 0;  // kernel nodes updated before a replay
};

// The graphs one plan's launches are replayed from, one per shape seen (the
// most recently used few). Not thread-safe: the owner serializes calls.
class LaunchGraphs {
 public:
  // The most shapes kept; the least recently used goes first.
  static constexpr int kMaxGraphs = 4;

  // Queues `launches` on `context`'s stream as one graph launch, capturing
  // a graph when none has their shape; on success `launches` is left moved
  // from. On an error nothing of them has run, they are left as they were
  // and the graphs are dropped: the caller may launch them directly.
  absl::Status Launch(jit::CudaContext& context, std::vector<PreparedLaunch>& launches, LaunchGraphStats& stats);
  int size() const { return static_cast<int>(graphs_.size()); }

 private:
  struct Graph {
    uint64_t shape = 0;
    jit::CudaGraph graph;
    std::vector<jit::CUgraphNode> nodes;  // by launch
    std::vector<PreparedLaunch> launches;  // what the nodes run now
    int64_t last_used = 0;
  };
  absl::StatusOr<Graph> Capture(jit::CudaContext& context, uint64_t shape,
                                const std::vector<PreparedLaunch>& launches);
  absl::Status Update(jit::CudaContext& context, Graph& graph, const std::vector<PreparedLaunch>& launches,
                      LaunchGraphStats& stats);

  std::vector<Graph> graphs_;
  int64_t clock_ = 0;
};

}  // namespace kiln

#endif  // KILN_OPTIMIZER_LAUNCH_GRAPH_H_
