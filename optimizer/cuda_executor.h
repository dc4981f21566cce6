// The CUDA executor: realizes traces on the GPU. A trace is cut into groups
// and lowered to a uGraph by the default rules, each kernel is generated,
// compiled with NVRTC (through the kernel cache) and loaded once per trace
// structure; every later trace with the same structural hash launches the
// same kernels with new pointers and symbol values.
#ifndef KILN_OPTIMIZER_CUDA_EXECUTOR_H_
#define KILN_OPTIMIZER_CUDA_EXECUTOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "jit/compile_pool.h"
#include "jit/cuda_context.h"
#include "jit/kernel_cache.h"
#include "jit/module_cache.h"
#include "optimizer/launch_graph.h"
#include "optimizer/lower.h"
#include "optimizer/ugraph.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/executor.h"

namespace kiln {

struct CudaExecutorStats {
  int64_t runs = 0;
  int64_t plans_built = 0;    // traces lowered, generated and compiled
  int64_t plan_hits = 0;      // traces that reused a plan
  int64_t kernels_compiled = 0;  // NVRTC compiles (not served by the kernel cache)
  int64_t launches = 0;
  int64_t regions_fused = 0;     // searched kernels in the plans built (see set_region_search)
  // With profiling on (set_profile): host time in Run until the last launch
  // is queued, and GPU time from the first launch to the last kernel's end.
  double host_seconds = 0;
  double gpu_seconds = 0;
  // With graphs on (set_graphs): runs replayed from a CUDA graph, graphs
  // captured, kernel nodes updated before a replay, and runs that launched
  // kernel by kernel because capturing or replaying failed.
  int64_t graph_replays = 0;
  int64_t graph_captures = 0;
  int64_t graph_node_updates = 0;
  int64_t graph_fallbacks = 0;
};

// With kernel profiling on (set_profile_kernels): the GPU time of one kind of
// kernel, summed over its launches.
struct KernelProfileRow {
  std::string kernel;  // what it computes: block kind, tile ops, output shape
  int64_t launches = 0;
  double seconds = 0;
  // Bytes of the buffers it reads and writes, summed over launches: what it
  // moves, or more for a kernel that touches part of a buffer (a KV cache).
  double tensor_bytes = 0;
};

class CudaExecutor : public Executor {
 public:
  struct Plan;
  // A uGraph with every kernel generated and compiled, ready to launch.
  struct CompiledGraph {
    struct Kernel;
    ugraph::KernelGraph graph;
    std::vector<Kernel> kernels;
    bool reports_errors = false;
  };

  // Opens the device (driver and NVRTC through dlopen). Unavailable, with the
  // reason, when there is no usable GPU.
  static absl::StatusOr<std::shared_ptr<CudaExecutor>> Create(int ordinal = 0);
  ~CudaExecutor() override;

  absl::StatusOr<std::vector<TensorData>> Run(const Trace& trace, const Bindings& bindings) override;
  // For a trace run many times with new symbol values and new contents in
  // its leaves' buffers (a decode step recorded once): its plan, with every
  // slice_update into a realized, writable, contiguous buffer done in place
  // however many handles share that buffer. The caller promises that the
  // buffer's old contents are not needed (a KV cache it owns and updates).
  absl::StatusOr<std::shared_ptr<const Plan>> PlanInPlace(const Trace& trace);
  // Runs `trace` by `plan` (from PlanInPlace for this trace, whose nodes
  // must still be alive and unrealized), skipping the lookup: no hashing.
  absl::StatusOr<std::vector<TensorData>> RunPlanned(const Trace& trace, const Plan& plan, const Bindings& bindings);
  absl::Status CopyToHost(const TensorData& data, DType dtype, void* dst) override;
  absl::StatusOr<TensorData> CopyFromHost(const TensorData& host, DType dtype) override;

  jit::CudaContext& context() { return context_; }
  ugraph::DeviceLimits limits() const;
  // Validates, generates and compiles (through the kernel cache) every kernel.
  absl::StatusOr<std::shared_ptr<const CompiledGraph>> Compile(ugraph::KernelGraph graph);
  // Starts compiling the kernels of `graph` on the executor's compile
  // threads into the kernel cache, so that Compile() finds them there; the
  // future is ready once they are done. Errors are left for Compile() to
  // report. Compiles not waited for finish in the background.
  std::shared_future<void> CompileInBackground(const ugraph::KernelGraph& graph);
  // Waits for the compiles under way and drops those not begun (at exit).
  void StopCompiles() { compile_pool_.Stop(); }
  // Queues every kernel on `buffers` (by DTensor id); returns the launches.
  absl::StatusOr<int64_t> Launch(const CompiledGraph& compiled, const std::vector<TensorData>& buffers,
                                 const Bindings& bindings);
  // Fill every buffer the executor allocates with 0xff bytes (NaN, -1) before
  // kernels run, so that tests see any element a kernel fails to write.
  void set_poison_buffers(bool poison) { poison_buffers_ = poison; }
  // Measure host and GPU time per Run (each Run then waits for its kernels).
  void set_profile(bool profile) { profile_ = profile; }
  // Time every kernel on its own (launched one by one, an event after each,
  // no graphs), summed by kind in kernel_profile(). For benchmarks.
  void set_profile_kernels(bool profile) { profile_kernels_ = profile; }
  // Since the last ResetStats, slowest first.
  std::vector<KernelProfileRow> kernel_profile() const;
  // Replay a trace structure's kernels from a CUDA graph from its second Run
  // on (where the driver can update graph nodes; the default): its
  // intermediate buffers are then kept from run to run, and a run updates
  // only the nodes whose pointers, symbol values or grid changed. Off: every
  // kernel is launched on its own.
  void set_graphs(bool graphs) { graphs_ = graphs; }
  // lowering::LowerOptions::pipelined_products for the traces planned from
  // now on.
  void set_pipelined_products(bool on) { layout_.pipelined_products = on; }
  // lowering::LowerOptions::decode_columns for the traces planned from now on.
  void set_decode_columns(int64_t columns) { layout_.decode_columns = columns; }
  bool graphs() const { return graphs_ && context_.CanUpdateGraphs(); }
  // Compile later kernels for `arch` ("sm_90" on an sm_90a device: the
  // generated code's paths for targets without Hopper's wgmma) instead of
  // the device's own (empty: the device's). For tests; set it while no
  // compile is under way.
  void set_compile_arch(std::string arch) { compile_arch_ = std::move(arch); }
  // Called when a trace's plan is built: the regions to run as searched
  // kernels (see search_trace.h, EnableSuperoptimizer). Unset: the default
  // lowering everywhere.
  using RegionSearch = std::function<std::vector<lowering::FusedRegion>(const Trace&)>;
  void set_region_search(RegionSearch search) { region_search_ = std::move(search); }
  const RegionSearch& region_search() const { return region_search_; }
  void ResetStats();
  CudaExecutorStats stats() const;
  const jit::KernelCache& kernel_cache() const { return *kernel_cache_; }

 private:
  CudaExecutor(jit::CudaContext& context, std::unique_ptr<jit::KernelCache> kernel_cache,
               std::shared_ptr<Storage> error_word);
  // The plan for `trace` with these slice_updates in place, built or found.
  absl::StatusOr<std::shared_ptr<const Plan>> PlanWith(const Trace& trace,
                                                       const absl::flat_hash_set<const Node*>& in_place);
  absl::StatusOr<std::vector<TensorData>> RunPlan(const Trace& trace, const Plan& plan, const Bindings& bindings,
                                                  std::chrono::steady_clock::time_point host_start);
  // Every launch of `compiled` on `buffers`, computed but not queued.
  absl::StatusOr<std::vector<PreparedLaunch>> PrepareLaunches(const CompiledGraph& compiled,
                                                              const std::vector<TensorData>& buffers,
                                                              const Bindings& bindings);
  // Queues `launches` one by one, each timed by events (set_profile_kernels),
  // waits for them and adds their times to kernel_profile_.
  absl::Status LaunchProfiled(const CompiledGraph& compiled, const std::vector<TensorData>& buffers,
                              std::vector<PreparedLaunch>& launches);
  // A split kernel's form for the last block alone, compiled once on demand.
  absl::StatusOr<jit::CudaFunction*> AloneFunction(const CompiledGraph::Kernel& kernel);
  // `fused`: how many searched kernels the plan runs.
  absl::StatusOr<std::shared_ptr<const Plan>> BuildPlan(const Trace& trace,
                                                        const absl::flat_hash_set<const Node*>& in_place,
                                                        int* fused);
  // Compile() for a graph already validated against limits().
  absl::StatusOr<std::shared_ptr<const CompiledGraph>> CompileValid(ugraph::KernelGraph graph);
  jit::CompileOptions CompileFlags() const;

  jit::CudaContext& context_;
  std::unique_ptr<jit::KernelCache> kernel_cache_;
  // Compiles into kernel_cache_; declared after it, so it stops (finishing
  // the compiles under way) before the cache goes.
  jit::CompilePool compile_pool_;
  jit::ModuleCache modules_;
  // `buffer` (workspace_ or counters_), at least `bytes` long: grown, and
  // zeroed, when it is not.
  absl::StatusOr<uint64_t> Workspace(std::shared_ptr<Storage>& buffer, int64_t bytes);

  std::shared_ptr<Storage> error_word_;  // kernels report errors here
  // Split loops' partial sums, and their counters (see KernelSource).
  absl::Mutex workspace_mu_;
  std::shared_ptr<Storage> workspace_, counters_;
  bool poison_buffers_ = false;
  bool profile_ = false;
  bool profile_kernels_ = false;
  bool graphs_ = true;
  // The lowering's layout choices (pipelined_products, decode_columns) for
  // the traces planned from now on; each plan adds its in-place updates and
  // fused regions.
  lowering::LowerOptions layout_;
  std::string compile_arch_;
  RegionSearch region_search_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Hash128, std::shared_ptr<const Plan>> plans_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, KernelProfileRow> kernel_profile_ ABSL_GUARDED_BY(mu_);
  CudaExecutorStats stats_ ABSL_GUARDED_BY(mu_);
};

// Registers a CudaExecutor for DeviceType::kCuda (once per process; later
// calls return the first outcome). Unavailable when no GPU can be used: kiln
// then keeps running on the CPU.
absl::Status InitCuda();
// The registered executor, or nullptr.
std::shared_ptr<CudaExecutor> GetCudaExecutor();

}  // namespace kiln

#endif  // KILN_OPTIMIZER_CUDA_EXECUTOR_H_
