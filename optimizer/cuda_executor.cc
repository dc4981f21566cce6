#include "optimizer/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "jit/nvrtc_api.h"
#include "ops/view_layout.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/lower.h"
#include "optimizer/ugraph_validate.h"

namespace kiln {

struct CudaExecutor::CompiledGraph::Kernel {
  codegen::KernelSource source;
  // Compiled for every block going on together where the split loop can
  // share out its combine (codegen::SourceFor).
  jit::CudaFunction* function = nullptr;
  // For such a loop: the blocks the device holds at once, the most a
  // cooperative launch of it may have.
  int64_t resident_blocks = 0;
  // And its form for the last block alone, compiled at the first launch
  // that cannot keep every block resident.
  struct Alone {
    absl::Mutex mu;
    jit::CudaFunction* function ABSL_GUARDED_BY(mu) = nullptr;
  };
  std::shared_ptr<Alone> alone;
};

// Everything needed to run traces of one structure.
struct CudaExecutor::Plan {
  struct Output {
    int tensor = -1;
    std::vector<int> views;  // trace node indices of the view chain, innermost first
  };
  // What replaying the plan's launches from graphs keeps between runs.
  struct Replay {
    absl::Mutex mu;
    int64_t runs ABSL_GUARDED_BY(mu) = 0;
    bool failed ABSL_GUARDED_BY(mu) = false;  // a capture or replay failed: launch one by one
    // Intermediate buffers by DTensor id, the same from run to run.
    std::vector<std::shared_ptr<Storage>> kept ABSL_GUARDED_BY(mu);
    LaunchGraphs graphs ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<const CompiledGraph> compiled;
  std::vector<int> tensor_node;  // DTensor id -> index in the trace's nodes
  std::vector<Output> outputs;
  std::vector<bool> returned;    // by DTensor id: a Run returns its buffer (a fresh one each run)
  std::shared_ptr<Replay> replay = std::make_shared<Replay>();
};

namespace {

// The clusters a kernel's blocks make where they go on together.
jit::Dim3 SplitCluster(const codegen::KernelSource& source) {
  return {source.split_cluster[0], source.split_cluster[1], source.split_cluster[2]};
}

uint64_t DevicePointer(const TensorData& data, DType dtype) {
  return reinterpret_cast<uint64_t>(data.storage->data()) +
         static_cast<uint64_t>(data.offset) * DTypeSize(dtype);
}

// slice_update nodes whose destination no one else can observe: the kernel
// may write into its buffer (the rule the CPU executor follows). With
// `shared`, also those whose destination other handles share (PlanInPlace).
absl::flat_hash_set<const Node*> InPlaceUpdates(const Trace& trace, bool shared = false) {
  absl::flat_hash_set<const Node*> out;
  const absl::flat_hash_set<const Node*> outputs(trace.outputs().begin(), trace.outputs().end());
  for (const Node* n : trace.nodes()) {
    if (n->is_realized() || n->op != OpKind::kSliceUpdate) continue;
    // An intermediate 16-bit result is stored as f32: not in a 16-bit buffer.
    const bool half = n->dtype == DType::kF16 || n->dtype == DType::kBF16;
    if (half && !outputs.contains(n)) continue;
    const std::shared_ptr<Node>& dst = n->inputs[0];
    if (!dst->is_realized()) continue;
    const bool alone = dst.use_count() == 1 && dst->data.storage.use_count() == 1;
    if ((alone || shared) && dst->data.storage->writable() && dst->data.is_contiguous()) {
      out.insert(n);
    }
  }
  return out;
}

Hash128 PlanKey(const Trace& trace, const absl::flat_hash_set<const Node*>& in_place,
                const lowering::LowerOptions& layout) {
  StableHasher h;
  h.Add(trace.StructuralHash());
  h.Add(layout.pipelined_products);
  h.Add(layout.decode_columns);
  for (const Node* n : trace.nodes()) {
    if (!n->is_realized() && n->op == OpKind::kSliceUpdate) h.Add(in_place.contains(n));
  }
  return h.Finish();
}

int64_t Product(const Extents& e) { return NumElements(e); }

absl::StatusOr<int64_t> LaunchCount(const ugraph::LaunchDim& d, const Bindings& bindings) {
  absl::StatusOr<Extents> extent = d.extent.Evaluate(bindings);
  if (!extent.ok()) return extent.status();
  const int64_t n = Product(*extent);
  return (n + d.tile - 1) / d.tile;
}

}  // namespace

CudaExecutor::CudaExecutor(jit::CudaContext& context, std::unique_ptr<jit::KernelCache> kernel_cache,
                           std::shared_ptr<Storage> error_word)
    : context_(context),
      kernel_cache_(std::move(kernel_cache)),
      compile_pool_(*kernel_cache_),
      modules_(context),
      error_word_(std::move(error_word)) {}

CudaExecutor::~CudaExecutor() = default;

absl::StatusOr<std::shared_ptr<CudaExecutor>> CudaExecutor::Create(int ordinal) {
  const jit::LibraryOptions libraries = jit::LibraryOptions::FromEnvironment();
  absl::StatusOr<jit::CudaContext*> context = jit::CudaContext::Shared(ordinal, libraries);
  if (!context.ok()) return context.status();
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc(libraries);
  if (!nvrtc.ok()) return nvrtc.status();
  std::unique_ptr<jit::KernelCache> cache = jit::KernelCache::WithNvrtc(
      jit::CacheOptions::FromEnvironment(), **nvrtc, (*context)->info().driver_version);
  absl::StatusOr<std::shared_ptr<Storage>> error_word = (*context)->Allocate(sizeof(int));
  if (!error_word.ok()) return error_word.status();
  if (absl::Status s = (*context)->Memset(reinterpret_cast<uint64_t>((*error_word)->data()), 0,
                                          sizeof(int));
      !s.ok()) {
    return s;
  }
  return std::shared_ptr<CudaExecutor>(
      new CudaExecutor(**context, std::move(cache), *std::move(error_word)));
}

CudaExecutorStats CudaExecutor::stats() const {
  absl::MutexLock lock(&mu_);
  CudaExecutorStats s = stats_;
  s.kernels_compiled = kernel_cache_->stats().compiles;
  return s;
}

absl::StatusOr<std::shared_ptr<const CudaExecutor::Plan>> CudaExecutor::PlanInPlace(const Trace& trace) {
  return PlanWith(trace, InPlaceUpdates(trace, /*shared=*/true));
}

absl::StatusOr<std::shared_ptr<const CudaExecutor::Plan>> CudaExecutor::PlanWith(
    const Trace& trace, const absl::flat_hash_set<const Node*>& in_place) {
  const Hash128 key = PlanKey(trace, in_place, layout_);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.runs;
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      ++stats_.plan_hits;
      return it->second;
    }
  }
  int fused = 0;
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(trace, in_place, &fused);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu_);
  ++stats_.plans_built;
  stats_.regions_fused += fused;
  plans_[key] = *plan;
  return *plan;
}

absl::StatusOr<std::shared_ptr<const CudaExecutor::Plan>> CudaExecutor::BuildPlan(
    const Trace& trace, const absl::flat_hash_set<const Node*>& in_place, int* fused) {
  lowering::LowerOptions options = layout_;
  options.in_place_updates = in_place;
  if (region_search_) options.fused = region_search_(trace);
  *fused = static_cast<int>(options.fused.size());
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(trace, options);
  if (!lowered.ok()) return lowered.status();
  if (absl::Status s = ugraph::Validate(lowered->graph, limits()); !s.ok()) {
    return absl::InternalError(absl::StrCat("CUDA executor: the lowering produced an invalid graph: ",
                                            s.message(), "\n", ugraph::ToText(lowered->graph)));
  }
  auto plan = std::make_shared<Plan>();
  for (const Node* n : lowered->tensor_nodes) plan->tensor_node.push_back(trace.IndexOf(n));
  for (const lowering::LoweredTrace::Output& o : lowered->outputs) {
    Plan::Output out;
    out.tensor = o.tensor;
    for (const Node* v : o.views) out.views.push_back(trace.IndexOf(v));
    plan->outputs.push_back(std::move(out));
  }
  absl::StatusOr<std::shared_ptr<const CompiledGraph>> compiled = CompileValid(std::move(lowered->graph));
  if (!compiled.ok()) return compiled.status();
  plan->compiled = *std::move(compiled);
  plan->returned.assign(plan->compiled->graph.tensors.size(), false);
  for (const Plan::Output& o : plan->outputs) plan->returned[o.tensor] = true;
  return std::shared_ptr<const Plan>(std::move(plan));
}

ugraph::DeviceLimits CudaExecutor::limits() const {
  const jit::DeviceInfo& info = context_.info();
  ugraph::DeviceLimits limits;
  limits.max_threads_per_block = info.max_threads_per_block;
  // Kernels with more dynamic shared memory than the default 48 KiB opt in
  // at launch (CudaContext::Launch raises the attribute).
  limits.max_shared_memory_per_block = std::max(info.shared_memory_per_block, info.shared_memory_per_block_optin);
  return limits;
}

absl::StatusOr<std::shared_ptr<const CudaExecutor::CompiledGraph>> CudaExecutor::Compile(
    ugraph::KernelGraph graph) {
  if (absl::Status s = ugraph::Validate(graph, limits()); !s.ok()) return s;
  return CompileValid(std::move(graph));
}

absl::StatusOr<std::shared_ptr<const CudaExecutor::CompiledGraph>> CudaExecutor::CompileValid(
    ugraph::KernelGraph graph) {
  auto compiled = std::make_shared<CompiledGraph>();
  compiled->graph = std::move(graph);
  std::vector<codegen::KernelSource> sources;
  std::vector<std::string> assembled;
  for (size_t k = 0; k < compiled->graph.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(compiled->graph, static_cast<int>(k));
    if (!source.ok()) return source.status();
    assembled.push_back(codegen::AssembleSource(codegen::SourceFor(*source, /*together=*/true)));
    sources.push_back(*std::move(source));
  }
  // A graph's kernels compile at once, not one by one (a default lowering
  // has a kernel per op: the first call waited for each in turn).
  const jit::CompileOptions compile = CompileFlags();
  if (assembled.size() > 1) compile_pool_.Submit(assembled, compile).wait();
  for (size_t k = 0; k < compiled->graph.kernels.size(); ++k) {
    codegen::KernelSource& source = sources[k];
    absl::StatusOr<jit::CachedKernel> cubin = kernel_cache_->GetOrCompile(assembled[k], compile);
    if (!cubin.ok()) return cubin.status();
    absl::StatusOr<jit::CudaModule*> module = modules_.GetOrLoad(*cubin);
    if (!module.ok()) return module.status();
    absl::StatusOr<jit::CudaFunction*> function = (*module)->GetFunction(codegen::kKernelName);
    if (!function.ok()) return function.status();
    compiled->reports_errors |= source.reports_errors;
    int64_t resident = 0;
    if (source.split_together) {
      absl::StatusOr<int64_t> blocks =
          context_.ResidentBlocks(**function, source.threads, static_cast<unsigned>(source.dynamic_shared_bytes),
                                  SplitCluster(source));
      if (!blocks.ok()) return blocks.status();
      resident = *blocks;
    }
    std::shared_ptr<CompiledGraph::Kernel::Alone> alone;
    if (source.split_together) alone = std::make_shared<CompiledGraph::Kernel::Alone>();
    compiled->kernels.push_back({std::move(source), *function, resident, std::move(alone)});
  }
  return std::shared_ptr<const CompiledGraph>(std::move(compiled));
}

absl::StatusOr<int64_t> CudaExecutor::Launch(const CompiledGraph& compiled, const std::vector<TensorData>& buffers,
                                             const Bindings& bindings) {
  absl::StatusOr<std::vector<PreparedLaunch>> launches = PrepareLaunches(compiled, buffers, bindings);
  if (!launches.ok()) return launches.status();
  for (PreparedLaunch& l : *launches) {
    void* args[] = {l.params.data()};
    if (absl::Status s = context_.Launch(*l.function, l.config, args); !s.ok()) return s;
  }
  return static_cast<int64_t>(launches->size());
}

absl::StatusOr<std::vector<PreparedLaunch>> CudaExecutor::PrepareLaunches(const CompiledGraph& compiled,
                                                                          const std::vector<TensorData>& buffers,
                                                                          const Bindings& bindings) {
  if (absl::Status s = context_.MakeCurrent(); !s.ok()) return s;
  const uint64_t error_word = reinterpret_cast<uint64_t>(error_word_->data());
  std::vector<PreparedLaunch> launches;
  launches.reserve(compiled.kernels.size());
  for (size_t k = 0; k < compiled.kernels.size(); ++k) {
    const CompiledGraph::Kernel& kernel = compiled.kernels[k];
    const ugraph::BlockGraph& block = compiled.graph.kernels[k].block;
    // Slice updates check their bounds here, where the start is known.
    for (const ugraph::OutputSaver& o : block.outputs) {
      if (o.shift_axis < 0) continue;
      absl::StatusOr<int64_t> start = o.shift.Evaluate(bindings);
      if (!start.ok()) return start.status();
      absl::StatusOr<Extents> block_sizes = block.iteration_shape.Evaluate(bindings);
      if (!block_sizes.ok()) return block_sizes.status();
      const int64_t size = buffers[o.tensor].sizes[o.shift_axis];
      const int64_t length = (*block_sizes)[o.shift_axis];
      if (*start < 0 || *start + length > size) {
        return absl::OutOfRangeError(absl::StrCat("slice_update: block [", *start, ", ",
                                                  *start + length, ") is outside axis ",
                                                  o.shift_axis, " of size ", size));
      }
    }
    jit::LaunchConfig config;
    config.block.x = static_cast<unsigned>(kernel.source.threads);
    config.dynamic_shared_bytes = static_cast<unsigned>(kernel.source.dynamic_shared_bytes);
    int64_t grid[3];
    bool empty = false;
    for (int g = 0; g < 3; ++g) {
      absl::StatusOr<int64_t> count = LaunchCount(block.grid[g], bindings);
      if (!count.ok()) return count.status();
      grid[g] = *count;
      empty |= grid[g] == 0;
    }
    if (block.kind == ugraph::BlockKind::kPointwise) {
      absl::StatusOr<Extents> space = block.iteration_shape.Evaluate(bindings);
      if (!space.ok()) return space.status();
      empty = Product(*space) == 0;
    }
    if (empty) continue;
    // A split loop's blocks line up along the split axis; per point of the
    // other axes, the workspace holds their partial sums and the counters
    // buffer kSplitCounters counters.
    uint64_t workspace = 0, counters = 0;
    if (const int split = ugraph::SplitGridAxis(block); split >= 0) {
      grid[split] = block.loop_split;
      const int64_t points = grid[0] * grid[1] * grid[2] / block.loop_split;
      absl::StatusOr<uint64_t> ws = Workspace(workspace_, points * kernel.source.workspace_bytes_per_point);
      if (!ws.ok()) return ws.status();
      absl::StatusOr<uint64_t> count = Workspace(counters_, points * codegen::kSplitCounters * sizeof(unsigned));
      if (!count.ok()) return count.status();
      workspace = *ws;
      counters = *count;
    }
    config.grid.x = static_cast<unsigned>(std::min<int64_t>(grid[0], ugraph::kMaxLaunchBlocks[0]));
    config.grid.y = static_cast<unsigned>(std::min<int64_t>(grid[1], ugraph::kMaxLaunchBlocks[1]));
    config.grid.z = static_cast<unsigned>(std::min<int64_t>(grid[2], ugraph::kMaxLaunchBlocks[2]));
    // Where the device holds the whole grid at once, a split loop's blocks
    // share out its combine, waiting for one another: the launch must keep
    // them all resident (cooperative).
    const int64_t blocks = int64_t{config.grid.x} * config.grid.y * config.grid.z;
    config.cooperative = kernel.source.split_together && blocks <= kernel.resident_blocks;
    if (config.cooperative) config.cluster = SplitCluster(kernel.source);
    jit::CudaFunction* function = kernel.function;
    if (kernel.source.split_together && !config.cooperative) {
      absl::StatusOr<jit::CudaFunction*> alone = AloneFunction(kernel);
      if (!alone.ok()) return alone.status();
      function = *alone;
    }
    // Its blocks start while the kernel before it finishes (it waits for
    // that kernel before touching memory: GenerateKernel). On the H100,
    // back-to-back launches of rmsnorm_linear_bs1's kernel took 0.3 us
    // less each. One that copies inputs before that wait
    // (inputs_before_wait) starts so only after another of its graph's
    // kernels: the kernel before it is then that one, which itself waited
    // for everything before the graph.
    config.early = !launches.empty() || !kernel.source.inputs_before_wait;
    // The kernel's one parameter: { char* t[]; long long s[]; int* err; char* ws; unsigned* counters;
    // unsigned together; }.
    std::vector<uint64_t> params;
    for (int t : kernel.source.slots) {
      params.push_back(DevicePointer(buffers[t], compiled.graph.tensors[t].dtype));
    }
    if (kernel.source.slots.empty()) params.push_back(0);
    for (const SymbolInfo* symbol : kernel.source.symbols) {
      params.push_back(static_cast<uint64_t>(bindings.Find(symbol).value_or(0)));
    }
    if (kernel.source.symbols.empty()) params.push_back(0);
    params.push_back(error_word);
    params.push_back(workspace);
    params.push_back(counters);
    params.push_back(config.cooperative ? 1 : 0);  // together (the low bytes)
    launches.push_back({function, config, std::move(params), static_cast<int>(k)});
  }
  return launches;
}

namespace {

// What kernel `k` of `graph` computes, for a profile: its block kind, its
// tile ops and its first output's shape.
std::string KernelLabel(const ugraph::KernelGraph& graph, int k) {
  const ugraph::BlockGraph& block = graph.kernels[k].block;
  std::string label = ugraph::BlockKindName(block.kind);
  for (size_t i = 0; i < block.tile_ops.size(); ++i) {
    absl::StrAppend(&label, i == 0 ? " " : ",", ugraph::TileKindName(block.tile_ops[i].kind));
  }
  if (!block.outputs.empty()) {
    absl::StrAppend(&label, " -> ", graph.tensors[block.outputs[0].tensor].shape.ToString());
  }
  return label;
}

}  // namespace

absl::Status CudaExecutor::LaunchProfiled(const CompiledGraph& compiled, const std::vector<TensorData>& buffers,
                                          std::vector<PreparedLaunch>& launches) {
  // A kernel that spins while the host queues the launches and events, so
  // that the GPU never waits for the host between them and each pair of
  // events times its kernel alone (a decode step's kernels take 2-20 us,
  // less than queueing a launch and an event).
  static constexpr char kSpin[] =
      "extern \"C\" __global__ void kiln_spin(long long cycles) {\n"
      "  const long long start = clock64();\n"
      "  while (clock64() - start < cycles) {}\n"
      "}\n";
  absl::StatusOr<jit::CachedKernel> cubin = kernel_cache_->GetOrCompile(kSpin, CompileFlags());
  if (!cubin.ok()) return cubin.status();
  absl::StatusOr<jit::CudaModule*> module = modules_.GetOrLoad(*cubin);
  if (!module.ok()) return module.status();
  absl::StatusOr<jit::CudaFunction*> spin = (*module)->GetFunction("kiln_spin");
  if (!spin.ok()) return spin.status();
  long long cycles = (static_cast<long long>(launches.size()) * 30 + 1000) * 2000;  // 30 us a launch at 2 GHz
  void* spin_args[] = {&cycles};
  jit::LaunchConfig one;
  if (absl::Status s = context_.Launch(**spin, one, spin_args); !s.ok()) return s;
  std::vector<jit::CudaEvent> events;
  events.reserve(launches.size() + 1);
  for (size_t i = 0; i <= launches.size(); ++i) {
    absl::StatusOr<jit::CudaEvent> event = context_.CreateEvent();
    if (!event.ok()) return event.status();
    events.push_back(*std::move(event));
  }
  if (absl::Status s = events[0].Record(); !s.ok()) return s;
  for (size_t i = 0; i < launches.size(); ++i) {
    PreparedLaunch& l = launches[i];
    l.config.early = false;  // an event between kernels: nothing to overlap
    void* args[] = {l.params.data()};
    if (absl::Status s = context_.Launch(*l.function, l.config, args); !s.ok()) return s;
    if (absl::Status s = events[i + 1].Record(); !s.ok()) return s;
  }
  if (absl::Status s = events.back().Synchronize(); !s.ok()) return s;
  std::vector<std::pair<std::string, KernelProfileRow>> rows;
  for (size_t i = 0; i < launches.size(); ++i) {
    absl::StatusOr<float> ms = jit::CudaEvent::ElapsedMilliseconds(events[i], events[i + 1]);
    if (!ms.ok()) return ms.status();
    const int k = launches[i].kernel;
    KernelProfileRow row;
    row.kernel = KernelLabel(compiled.graph, k);
    row.launches = 1;
    row.seconds = *ms / 1e3;
    for (int t : compiled.kernels[k].source.slots) {
      row.tensor_bytes += static_cast<double>(buffers[t].num_elements()) * DTypeSize(compiled.graph.tensors[t].dtype);
    }
    rows.emplace_back(row.kernel, std::move(row));
  }
  absl::MutexLock lock(&mu_);
  for (auto& [label, row] : rows) {
    KernelProfileRow& sum = kernel_profile_[label];
    sum.kernel = label;
    sum.launches += row.launches;
    sum.seconds += row.seconds;
    sum.tensor_bytes += row.tensor_bytes;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> CudaExecutor::Workspace(std::shared_ptr<Storage>& buffer, int64_t bytes) {
  absl::MutexLock lock(&workspace_mu_);
  if (buffer == nullptr || buffer->bytes() < static_cast<size_t>(bytes)) {
    // Kernels queued earlier may still use the old buffer. The new one
    // starts zero: counters must (kernels leave them zero), and partial
    // sums do not care.
    if (absl::Status s = context_.Synchronize(); !s.ok()) return s;
    const size_t size = std::max<size_t>(static_cast<size_t>(bytes), buffer ? 2 * buffer->bytes() : 1 << 16);
    buffer.reset();
    absl::StatusOr<std::shared_ptr<Storage>> storage = context_.Allocate(size);
    if (!storage.ok()) return storage.status();
    if (absl::Status s = context_.Memset(reinterpret_cast<jit::CUdeviceptr>((*storage)->data()), 0, size);
        !s.ok()) {
      return s;
    }
    buffer = *std::move(storage);
  }
  return reinterpret_cast<uint64_t>(buffer->data());
}

absl::StatusOr<jit::CudaFunction*> CudaExecutor::AloneFunction(const CompiledGraph::Kernel& kernel) {
  absl::MutexLock lock(&kernel.alone->mu);
  if (kernel.alone->function != nullptr) return kernel.alone->function;
  absl::StatusOr<jit::CachedKernel> cubin = kernel_cache_->GetOrCompile(
      codegen::AssembleSource(codegen::SourceFor(kernel.source, /*together=*/false)), CompileFlags());
  if (!cubin.ok()) return cubin.status();
  absl::StatusOr<jit::CudaModule*> module = modules_.GetOrLoad(*cubin);
  if (!module.ok()) return module.status();
  absl::StatusOr<jit::CudaFunction*> function = (*module)->GetFunction(codegen::kKernelName);
  if (!function.ok()) return function.status();
  kernel.alone->function = *function;
  return *function;
}

jit::CompileOptions CudaExecutor::CompileFlags() const {
  jit::CompileOptions compile;
  compile.arch = compile_arch_.empty() ? context_.info().arch() : compile_arch_;
  return compile;
}

std::shared_future<void> CudaExecutor::CompileInBackground(const ugraph::KernelGraph& graph) {
  std::vector<std::string> sources;
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, static_cast<int>(k));
    if (source.ok()) sources.push_back(codegen::AssembleSource(codegen::SourceFor(*source, /*together=*/true)));
  }
  return compile_pool_.Submit(std::move(sources), CompileFlags());
}

void CudaExecutor::ResetStats() {
  absl::MutexLock lock(&mu_);
  stats_ = CudaExecutorStats();
  kernel_profile_.clear();
}

std::vector<KernelProfileRow> CudaExecutor::kernel_profile() const {
  std::vector<KernelProfileRow> rows;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [label, row] : kernel_profile_) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const KernelProfileRow& a, const KernelProfileRow& b) {
    return a.seconds > b.seconds || (a.seconds == b.seconds && a.kernel < b.kernel);
  });
  return rows;
}

absl::StatusOr<std::vector<TensorData>> CudaExecutor::Run(const Trace& trace,
                                                          const Bindings& bindings) {
  const auto host_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const Plan>> found = PlanWith(trace, InPlaceUpdates(trace));
  if (!found.ok()) return found.status();
  return RunPlan(trace, **found, bindings, host_start);
}

absl::StatusOr<std::vector<TensorData>> CudaExecutor::RunPlanned(const Trace& trace, const Plan& plan,
                                                                 const Bindings& bindings) {
  const auto host_start = std::chrono::steady_clock::now();
  {
    absl::MutexLock lock(&mu_);
    ++stats_.runs;
    ++stats_.plan_hits;
  }
  if (plan.tensor_node.size() != plan.compiled->graph.tensors.size() ||
      std::any_of(plan.tensor_node.begin(), plan.tensor_node.end(),
                  [&](int n) { return n < 0 || n >= static_cast<int>(trace.nodes().size()); })) {
    return absl::InvalidArgumentError("CUDA executor: RunPlanned with a trace the plan was not made for");
  }
  return RunPlan(trace, plan, bindings, host_start);
}

absl::StatusOr<std::vector<TensorData>> CudaExecutor::RunPlan(const Trace& trace, const Plan& plan,
                                                              const Bindings& bindings,
                                                              std::chrono::steady_clock::time_point host_start) {
  std::optional<jit::CudaEvent> gpu_start, gpu_end;
  if (absl::Status s = context_.MakeCurrent(); !s.ok()) return s;
  // Runs of one plan take turns: they share its kept buffers and graphs.
  Plan::Replay& replay = *plan.replay;
  absl::MutexLock replay_lock(&replay.mu);
  const bool graphed = ++replay.runs >= 2 && !replay.failed && graphs() && !profile_kernels_;
  if (graphed) replay.kept.resize(plan.compiled->graph.tensors.size());

  // Buffers: leaves as they are, the rest allocated (or aliased) now; with
  // graphs, the intermediates kept from the last run where they fit.
  const std::vector<Node*>& nodes = trace.nodes();
  std::vector<TensorData> buffers(plan.compiled->graph.tensors.size());
  for (const ugraph::DTensor& t : plan.compiled->graph.tensors) {
    if (t.role == ugraph::TensorRole::kInput) {
      const Node* node = nodes[plan.tensor_node[t.id]];
      if (!node->is_realized() || node->data.storage->device().type != DeviceType::kCuda) {
        return absl::InvalidArgumentError(absl::StrCat(
            "CUDA executor: input ", node->shape.ToString(), " is not on the GPU; use to()"));
      }
      buffers[t.id] = node->data;
      continue;
    }
    absl::StatusOr<Extents> sizes = t.shape.Evaluate(bindings);
    if (!sizes.ok()) return sizes.status();
    TensorData data;
    if (t.aliases >= 0) {
      data = buffers[t.aliases];
    } else {
      const size_t bytes = std::max<size_t>(1, Product(*sizes) * DTypeSize(t.dtype));
      std::shared_ptr<Storage>* kept = graphed && !plan.returned[t.id] ? &replay.kept[t.id] : nullptr;
      if (kept != nullptr && *kept != nullptr && (*kept)->bytes() >= bytes) {
        data.storage = *kept;
      } else {
        // A kept buffer grows by half again at least: a length that grows
        // by a token a step moves it (and updates graph nodes) rarely.
        const size_t size = kept != nullptr && *kept != nullptr ? std::max(bytes, (*kept)->bytes() * 3 / 2) : bytes;
        absl::StatusOr<std::shared_ptr<Storage>> storage = context_.Allocate(size);
        if (!storage.ok()) return storage.status();
        data.storage = *std::move(storage);
        if (kept != nullptr) *kept = data.storage;
      }
      if (poison_buffers_) {
        if (absl::Status s = context_.Memset(reinterpret_cast<uint64_t>(data.storage->data()), 0xff, bytes);
            !s.ok()) {
          return s;
        }
      }
    }
    data.sizes = *sizes;
    data.strides = ContiguousStrides(*sizes);
    buffers[t.id] = std::move(data);
  }

  const uint64_t error_word = reinterpret_cast<uint64_t>(error_word_->data());
  if (profile_) {
    absl::StatusOr<jit::CudaEvent> start = context_.CreateEvent();
    absl::StatusOr<jit::CudaEvent> end = context_.CreateEvent();
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    gpu_start.emplace(*std::move(start));
    gpu_end.emplace(*std::move(end));
    if (absl::Status s = gpu_start->Record(); !s.ok()) return s;
  }
  const CompiledGraph& compiled = *plan.compiled;
  absl::StatusOr<std::vector<PreparedLaunch>> prepared = PrepareLaunches(compiled, buffers, bindings);
  if (!prepared.ok()) return prepared.status();
  const int64_t launches = static_cast<int64_t>(prepared->size());
  LaunchGraphStats graph_stats;
  bool replayed = false;
  if (graphed && launches > 0) {
    // A graph that cannot be captured or replayed (a driver that refuses a
    // kind of launch in graphs) leaves the plan to per-kernel launches.
    const absl::Status s = replay.graphs.Launch(context_, *prepared, graph_stats);
    replayed = s.ok();
    replay.failed = !replayed;
    static std::once_flag warned;
    if (!replayed) {
      std::call_once(warned, [&] {
        std::fprintf(stderr, "kiln: CUDA graph replay failed (%s); launching kernels one by one\n",
                     s.ToString().c_str());
      });
    }
  }
  if (!replayed && profile_kernels_) {
    if (absl::Status s = LaunchProfiled(compiled, buffers, *prepared); !s.ok()) return s;
  } else if (!replayed) {
    for (PreparedLaunch& l : *prepared) {
      void* args[] = {l.params.data()};
      if (absl::Status s = context_.Launch(*l.function, l.config, args); !s.ok()) return s;
    }
  }
  double host_seconds = 0, gpu_seconds = 0;
  if (profile_) {
    host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    if (absl::Status s = gpu_end->Record(); !s.ok()) return s;
    absl::StatusOr<float> ms = jit::CudaEvent::ElapsedMilliseconds(*gpu_start, *gpu_end);
    if (!ms.ok()) return ms.status();
    gpu_seconds = *ms / 1e3;
  }
  {
    absl::MutexLock lock(&mu_);
    stats_.launches += launches;
    stats_.host_seconds += host_seconds;
    stats_.gpu_seconds += gpu_seconds;
    stats_.graph_replays += graph_stats.replays;
    stats_.graph_captures += graph_stats.captures;
    stats_.graph_node_updates += graph_stats.node_updates;
    stats_.graph_fallbacks += graphed && launches > 0 && !replayed ? 1 : 0;
  }
  if (plan.compiled->reports_errors) {
    int code = 0;
    if (absl::Status s = context_.CopyDeviceToHost(&code, error_word, sizeof(int)); !s.ok()) return s;
    if (code != 0) {
      if (absl::Status s = context_.Memset(error_word, 0, sizeof(int)); !s.ok()) return s;
      return code == 1 ? absl::OutOfRangeError("index_select: an index is out of range (on the GPU)")
                       : absl::InvalidArgumentError("div: integer division by zero (on the GPU)");
    }
  }

  std::vector<TensorData> results;
  for (const Plan::Output& o : plan.outputs) {
    TensorData data = buffers[o.tensor];
    for (int v : o.views) {
      const Node& view = *nodes[v];
      absl::StatusOr<Extents> sizes = view.shape.Evaluate(bindings);
      if (!sizes.ok()) return sizes.status();
      absl::StatusOr<std::optional<TensorData>> next = ViewLayout(view, data, *sizes, bindings);
      if (!next.ok()) return next.status();
      if (!next->has_value()) {
        return absl::InternalError("CUDA executor: a view output needs a copy the plan lacks");
      }
      data = **next;
    }
    results.push_back(std::move(data));
  }
  return results;
}

absl::Status CudaExecutor::CopyToHost(const TensorData& data, DType dtype, void* dst) {
  if (absl::Status s = context_.MakeCurrent(); !s.ok()) return s;
  const size_t element = DTypeSize(dtype);
  const int64_t n = data.num_elements();
  if (n == 0) return absl::OkStatus();
  if (data.is_contiguous()) {
    return context_.CopyDeviceToHost(dst, DevicePointer(data, dtype), n * element);
  }
  // A strided view: fetch the span it touches, then gather on the host.
  int64_t last = 0;
  for (size_t i = 0; i < data.sizes.size(); ++i) last += (data.sizes[i] - 1) * data.strides[i];
  std::vector<char> span(static_cast<size_t>(last + 1) * element);
  if (absl::Status s = context_.CopyDeviceToHost(span.data(), DevicePointer(data, dtype), span.size());
      !s.ok()) {
    return s;
  }
  CopyStrided(element, data.sizes, span.data(), data.strides, dst, ContiguousStrides(data.sizes));
  return absl::OkStatus();
}

absl::StatusOr<TensorData> CudaExecutor::CopyFromHost(const TensorData& host, DType dtype) {
  if (absl::Status s = context_.MakeCurrent(); !s.ok()) return s;
  const size_t bytes = static_cast<size_t>(host.num_elements()) * DTypeSize(dtype);
  std::vector<char> dense(bytes);
  if (bytes > 0) CopyStridedToDense(host, DTypeSize(dtype), dense.data());
  absl::StatusOr<std::shared_ptr<Storage>> storage = context_.Allocate(std::max<size_t>(1, bytes));
  if (!storage.ok()) return storage.status();
  if (bytes > 0) {
    if (absl::Status s = context_.CopyHostToDevice(reinterpret_cast<uint64_t>((*storage)->data()),
                                                   dense.data(), bytes);
        !s.ok()) {
      return s;
    }
  }
  TensorData out;
  out.storage = *std::move(storage);
  out.sizes = host.sizes;
  out.strides = ContiguousStrides(host.sizes);
  return out;
}

namespace {

struct CudaRegistration {
  absl::Status status;
  std::shared_ptr<CudaExecutor> executor;
};

CudaRegistration& Registration() {
  static CudaRegistration* registration = [] {
    auto* r = new CudaRegistration();
    absl::StatusOr<std::shared_ptr<CudaExecutor>> executor = CudaExecutor::Create(0);
    if (executor.ok()) {
      r->executor = *executor;
      RegisterExecutor(DeviceType::kCuda, r->executor);
      // The executor lives as long as the process; its background compiles
      // (a search's slowest, left at its budget's end) must not outlive
      // the libraries' static objects at exit.
      std::atexit([] { Registration().executor->StopCompiles(); });
    } else {
      r->status = executor.status();
    }
    return r;
  }();
  return *registration;
}

}  // namespace

absl::Status InitCuda() { return Registration().status; }

std::shared_ptr<CudaExecutor> GetCudaExecutor() { return Registration().executor; }

}  // namespace kiln
