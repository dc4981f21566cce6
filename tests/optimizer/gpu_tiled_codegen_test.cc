// The code generator's kernels for the hand-made uGraphs of tiled_graphs.h,
// run on a GPU against a plain CPU loop (GpuTiledCodegen; skipped without
// one), and their bandwidth at decode shapes reported.
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>

#include "jit/cuda_context.h"
#include "absl/strings/str_cat.h"
#include "jit/cuda_status.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/emitter.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/convert.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/optimizer/tiled_graphs.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ugraph::KernelGraph;
using ugraph::TensorRole;
using testing::GatedMlp;
using testing::Lora;
using testing::Mean;
using testing::RmsNormLinear;
using testing::SymbolicDimsRefused;
using testing::Tiles;
using testing::ValueOrFail;

// Values rounded to `dtype`, uniform in [-scale, scale).
std::vector<float> RandomValues(DType dtype, int64_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(count);
  for (float& x : v) x = testing::RoundTo(dtype, dist(rng));
  return v;
}

// Row-major [rows, inner] x [inner, cols] in double, operands rounded to
// `dtype` (as the kernel's matmul does).
std::vector<double> MatmulRef(DType dtype, const std::vector<float>& a, const std::vector<float>& b,
                              int64_t rows, int64_t inner, int64_t cols) {
  std::vector<double> out(rows * cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t x = 0; x < inner; ++x) {
      const double av = testing::RoundTo(dtype, a[i * inner + x]);
      for (int64_t j = 0; j < cols; ++j) out[i * cols + j] += av * testing::RoundTo(dtype, b[x * cols + j]);
    }
  }
  return out;
}

std::vector<float> Stored(DType dtype, const std::vector<double>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = testing::RoundTo(dtype, static_cast<float>(v[i]));
  return out;
}

class GpuTiledCodegen : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<jit::CudaContext>> context = jit::CudaContext::Create(0);
    if (!context.ok()) GTEST_SKIP() << "no CUDA device: " << context.status();
    context_ = *std::move(context);
    absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
    if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
    nvrtc_ = *nvrtc;
  }

  // A compiled kernel, its buffers and its launch, ready to go.
  struct Prepared {
    std::unique_ptr<jit::CudaModule> modules[2];  // by `together` (SourceFor)
    jit::CudaFunction* functions[2] = {};
    jit::CudaFunction* function = nullptr;  // the last block alone's (functions[0])
    std::vector<std::shared_ptr<Storage>> buffers;
    std::vector<int64_t> counts;
    // { char* t[]; long long s[]; int* err; char* ws; unsigned* counters; unsigned together; }
    std::vector<uint64_t> params;
    std::shared_ptr<Storage> workspace, counters;
    jit::LaunchConfig config;
    // A split loop that can share out its combine, and whether its grid fits
    // on the device at once (a cooperative launch), in `cluster`'s clusters.
    bool together = false;
    jit::Dim3 cluster;
  };

  // Compiles the graph's kernel and uploads `inputs` (f32 values by tensor
  // id, converted to each tensor's dtype; an input not among them is left
  // for the caller to write). Outputs start as 0xff bytes (NaN), so an
  // element the kernel skips shows.
  absl::StatusOr<Prepared> Prepare(const KernelGraph& graph, const std::map<int, std::vector<float>>& inputs,
                                   const Bindings& bindings) {
    if (absl::Status s = ugraph::Validate(graph); !s.ok()) return s;
    KILN_JIT_ASSIGN_OR_RETURN(codegen::KernelSource source, codegen::GenerateKernel(graph, 0));
    jit::CompileOptions options;
    options.arch = context_->info().arch();
    // As the executor compiles it: for the last block alone and, where its
    // split loop can share out its combine, for every block going on
    // (codegen::SourceFor; the same source when it cannot).
    Prepared p;
    for (const bool together : {false, true}) {
      if (together && !source.split_together) break;
      KILN_JIT_ASSIGN_OR_RETURN(
          std::string cubin,
          jit::CompileToCubin(*nvrtc_, codegen::AssembleSource(codegen::SourceFor(source, together)), options));
      KILN_JIT_ASSIGN_OR_RETURN(p.modules[together], context_->LoadModule(cubin));
      KILN_JIT_ASSIGN_OR_RETURN(p.functions[together], p.modules[together]->GetFunction(codegen::kKernelName));
    }
    p.function = p.functions[false];
    p.buffers.resize(graph.tensors.size());
    p.counts.resize(graph.tensors.size());
    for (const ugraph::DTensor& t : graph.tensors) {
      KILN_JIT_ASSIGN_OR_RETURN(Extents sizes, t.shape.Evaluate(bindings));
      p.counts[t.id] = NumElements(sizes);
      const size_t bytes = std::max<size_t>(1, p.counts[t.id] * DTypeSize(t.dtype));
      KILN_JIT_ASSIGN_OR_RETURN(p.buffers[t.id], context_->Allocate(bytes));
      const jit::CUdeviceptr ptr = jit::DevicePointer(*p.buffers[t.id]);
      if (t.role != TensorRole::kInput) {
        KILN_JIT_RETURN_IF_ERROR(context_->Memset(ptr, 0xff, bytes));
        continue;
      }
      if (!inputs.contains(t.id)) continue;
      const std::vector<float>& values = inputs.at(t.id);
      if (static_cast<int64_t>(values.size()) != p.counts[t.id]) {
        return absl::InvalidArgumentError(absl::StrCat("input t", t.id, " has the wrong size"));
      }
      std::vector<char> stored(bytes);
      ConvertElements(DType::kF32, values.data(), t.dtype, stored.data(), p.counts[t.id]);
      KILN_JIT_RETURN_IF_ERROR(context_->CopyHostToDevice(ptr, stored.data(), bytes));
    }
    for (int t : source.slots) p.params.push_back(jit::DevicePointer(*p.buffers[t]));
    for (const SymbolInfo* symbol : source.symbols) {
      p.params.push_back(static_cast<uint64_t>(bindings.Find(symbol).value_or(0)));
    }
    if (source.symbols.empty()) p.params.push_back(0);
    p.params.push_back(0);  // no error word: these kernels report nothing
    p.config.block.x = static_cast<unsigned>(source.threads);
    p.config.dynamic_shared_bytes = static_cast<unsigned>(source.dynamic_shared_bytes);
    const ugraph::BlockGraph& block = graph.kernels[0].block;
    unsigned* grid[3] = {&p.config.grid.x, &p.config.grid.y, &p.config.grid.z};
    int64_t points = 1;
    for (int g = 0; g < 3; ++g) {
      const ugraph::LaunchDim& d = block.grid[g];
      KILN_JIT_ASSIGN_OR_RETURN(Extents extent, d.extent.Evaluate(bindings));
      *grid[g] = static_cast<unsigned>((NumElements(extent) + d.tile - 1) / d.tile);
      points *= *grid[g];
    }
    // A split loop: its blocks along the split axis, counters (zero) and
    // partial sums in the workspace.
    uint64_t workspace = 0, counters = 0;
    if (const int split = ugraph::SplitGridAxis(block); split >= 0) {
      *grid[split] = static_cast<unsigned>(block.loop_split);
      KILN_JIT_ASSIGN_OR_RETURN(p.workspace, context_->Allocate(points * source.workspace_bytes_per_point));
      const int64_t counter_bytes = points * codegen::kSplitCounters * sizeof(unsigned);
      KILN_JIT_ASSIGN_OR_RETURN(p.counters, context_->Allocate(counter_bytes));
      workspace = jit::DevicePointer(*p.workspace);
      counters = jit::DevicePointer(*p.counters);
      // Partial sums that look like counts must not matter.
      KILN_JIT_RETURN_IF_ERROR(context_->Memset(workspace, 0x01, points * source.workspace_bytes_per_point));
      KILN_JIT_RETURN_IF_ERROR(context_->Memset(counters, 0, counter_bytes));
      p.cluster = {source.split_cluster[0], source.split_cluster[1], source.split_cluster[2]};
      if (source.split_together) {
        KILN_JIT_ASSIGN_OR_RETURN(const int64_t resident, context_->ResidentBlocks(*p.functions[true], source.threads,
                                                                                   p.config.dynamic_shared_bytes,
                                                                                   p.cluster));
        p.together = int64_t{p.config.grid.x} * p.config.grid.y * p.config.grid.z <= resident;
      }
    }
    p.params.push_back(workspace);
    p.params.push_back(counters);
    p.params.push_back(0);  // together: set by Launch
    return p;
  }

  // Launches the kernel; `together`: cooperatively, its split loop's blocks
  // sharing out the combine.
  absl::Status Launch(Prepared& p, bool together = false) {
    p.config.cooperative = together;
    p.config.cluster = together ? p.cluster : jit::Dim3{};
    p.params.back() = together ? 1 : 0;
    void* args[] = {p.params.data()};
    return context_->Launch(*(together ? p.functions[true] : p.function), p.config, args);
  }

  // Runs the kernel twice, the output poisoned before each (a split loop
  // must leave its counters ready for the next launch), and returns tensor
  // `output` as f32; `fill` first writes the inputs left to the caller.
  // A split loop that can share out its combine runs twice more that way,
  // whose output must be the same to the bit (the same sums in the same
  // order). A kernel with a grid axis its launch covers runs again with one
  // grid point a block (one_point_blocks, which the search may choose), the
  // same to the bit.
  absl::StatusOr<std::vector<float>> Run(const KernelGraph& graph,
                                         const std::map<int, std::vector<float>>& inputs, int output,
                                         const Bindings& bindings = {},
                                         const std::function<absl::Status(Prepared&)>& fill = nullptr) {
    KILN_JIT_ASSIGN_OR_RETURN(Prepared p, Prepare(graph, inputs, bindings));
    if (fill) KILN_JIT_RETURN_IF_ERROR(fill(p));
    const DType dtype = graph.tensors[output].dtype;
    std::vector<char> stored(p.counts[output] * DTypeSize(dtype));
    const jit::CUdeviceptr out_ptr = jit::DevicePointer(*p.buffers[output]);
    const auto run_twice = [&](bool together) -> absl::Status {
      for (int i = 0; i < 2; ++i) {
        KILN_JIT_RETURN_IF_ERROR(context_->Memset(out_ptr, 0xff, std::max<size_t>(1, stored.size())));
        KILN_JIT_RETURN_IF_ERROR(Launch(p, together));
      }
      KILN_JIT_RETURN_IF_ERROR(context_->Synchronize());
      return context_->CopyDeviceToHost(stored.data(), out_ptr, stored.size());
    };
    // Each launch leaves its counters zero for the next (the last block,
    // or the last block out of split_leave).
    const auto counters_zero = [&]() -> absl::Status {
      if (!p.counters) return absl::OkStatus();
      std::vector<unsigned> counters(p.counters->bytes() / sizeof(unsigned), 1u);
      KILN_JIT_RETURN_IF_ERROR(
          context_->CopyDeviceToHost(counters.data(), jit::DevicePointer(*p.counters), p.counters->bytes()));
      for (unsigned c : counters) {
        if (c != 0u) return absl::InternalError("a split loop left a counter nonzero after its launch");
      }
      return absl::OkStatus();
    };
    KILN_JIT_RETURN_IF_ERROR(run_twice(false));
    KILN_JIT_RETURN_IF_ERROR(counters_zero());
    if (p.together) {
      const std::vector<char> last_block = stored;
      KILN_JIT_RETURN_IF_ERROR(run_twice(true));
      if (stored != last_block) {
        return absl::InternalError("the split loop's combine shared out by every block differs from the last block's");
      }
      KILN_JIT_RETURN_IF_ERROR(counters_zero());
      ++together_runs_;
      cluster_runs_ += uint64_t{p.cluster.x} * p.cluster.y * p.cluster.z > 1;
    }
    std::vector<float> out(p.counts[output]);
    ConvertElements(dtype, stored.data(), DType::kF32, out.data(), p.counts[output]);
    if (const std::optional<KernelGraph> one_point = ugraph::OnePointForm(graph)) {
      KILN_JIT_ASSIGN_OR_RETURN(std::vector<float> again, Run(*one_point, inputs, output, bindings, fill));
      if (again.size() != out.size() || std::memcmp(again.data(), out.data(), out.size() * sizeof(float)) != 0) {
        return absl::InternalError("one grid point a block differs from the grid-stride loop's output");
      }
      ++one_point_runs_;
    }
    return out;
  }

  // Mean microseconds per launch over `runs` launches after a warm-up.
  absl::StatusOr<double> Time(Prepared& p, int runs) {
    for (int i = 0; i < 3; ++i) KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_ASSIGN_OR_RETURN(jit::CudaEvent start, context_->CreateEvent());
    KILN_JIT_ASSIGN_OR_RETURN(jit::CudaEvent end, context_->CreateEvent());
    KILN_JIT_RETURN_IF_ERROR(start.Record());
    for (int i = 0; i < runs; ++i) KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_RETURN_IF_ERROR(end.Record());
    KILN_JIT_RETURN_IF_ERROR(end.Synchronize());
    KILN_JIT_ASSIGN_OR_RETURN(float ms, jit::CudaEvent::ElapsedMilliseconds(start, end));
    return 1e3 * ms / runs;
  }

  // Prints the kernel's time and bandwidth (weights counted `weights` times).
  void ReportBandwidth(const std::string& name, const KernelGraph& graph, int64_t m, int64_t k, int64_t n,
                       int64_t weights);

  std::unique_ptr<jit::CudaContext> context_;
  const jit::NvrtcApi* nvrtc_ = nullptr;
  int together_runs_ = 0;  // Runs that compared the shared-out combine with the last block's
  int cluster_runs_ = 0;   // of them, in thread block clusters (KernelSource::split_cluster)
  int one_point_runs_ = 0;  // Runs that compared one grid point a block with the grid-stride loop
};

// Tolerances for results stored as `dtype`.
double Tolerance(DType dtype) { return dtype == DType::kF32 ? 1e-4 : 1e-2; }

struct Shape3 {
  int64_t m, k, n;
};

constexpr Shape3 kShapes[] = {{1, 127, 127}, {3, 4097, 127}, {17, 4097, 256}, {17, 64, 64}, {16, 128, 4096}};

// Weights [K, N] as stored [N, K].
std::vector<float> Transposed(const std::vector<float>& w, int64_t k, int64_t n) {
  std::vector<float> t(w.size());
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) t[j * k + i] = w[i * n + j];
  }
  return t;
}

TEST_F(GpuTiledCodegen, RmsNormLinearMatchesACpuLoop) {
  struct Variant {
    Tiles tiles;
    bool transposed;
    double shift = 0;
    Mean mean = Mean::kOnTotal;
  };
  // Tiles of the search's usual sizes, odd sizes (no 16-byte loads, A rows
  // not 16-byte aligned), and weights stored [N, K].
  // Split loops: 4 blocks per grid point, and 3 blocks of odd loop tiles
  // (some of them with no step at the smallest K). A sum of (x + 1)^2,
  // kept in registers, must skip the zeros past K's end. The 1/K of the
  // mean on each step's sum and on each square, whole and split. Tiles of
  // 32 and 16 columns: tensor cores on rows of 4 and 2 swizzled vectors.
  // 32 blocks: lanes in groups a vector (Run checks the combine's bits
  // both ways). Weights stored [N, K] in tiles of 64 k: the dot form
  // (PlanDot), alone and split 4 ways.
  const Variant variants[] = {{{}, false},
                              {{.n = 32}, false},
                              {{.m = 16, .k = 64, .n = 16, .split = 3}, false},
                              {{.m = 5, .k = 30, .n = 24}, false},
                              {{}, true},
                              {{.split = 4}, false},
                              {{.m = 5, .k = 30, .n = 24, .split = 3}, true},
                              {{.split = 3}, false, 1.0},
                              {{}, false, 0, Mean::kOnStepSum},
                              {{.m = 5, .k = 30, .n = 24, .split = 3}, false, 1.0, Mean::kOnStepSum},
                              {{.split = 3}, false, 0, Mean::kOnSquares},
                              {{.split = 32}, false},
                              {{.split = 4}, true}};
  for (DType dtype : {DType::kF16, DType::kF32, DType::kBF16}) {
    for (const Shape3& s : kShapes) {
      for (const Variant& v : variants) {
        SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " M=", s.m, " K=", s.k, " N=", s.n, " tiles ", v.tiles.m, "x",
                                  v.tiles.k, "x", v.tiles.n, " split ", v.tiles.split,
                                  v.transposed ? " transposed" : "", " mean ", static_cast<int>(v.mean)));
        const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 1);
        const std::vector<float> w = RandomValues(dtype, s.k * s.n, 1.0f / std::sqrt(float(s.k)), 2);
        absl::StatusOr<std::vector<float>> out =
            Run(RmsNormLinear(dtype, s.m, s.k, s.n, v.tiles, v.transposed, v.shift, v.mean),
                {{0, x}, {1, v.transposed ? Transposed(w, s.k, s.n) : w}}, 2);
        ASSERT_TRUE(out.ok()) << out.status();
        std::vector<double> expected = MatmulRef(dtype, x, w, s.m, s.k, s.n);
        for (int64_t i = 0; i < s.m; ++i) {
          double squares = 0;
          for (int64_t j = 0; j < s.k; ++j) {
            const double term = double(x[i * s.k + j]) + v.shift;
            squares += term * term;
          }
          const double scale = 1.0 / std::sqrt(squares / double(s.k) + 1e-6);
          for (int64_t j = 0; j < s.n; ++j) expected[i * s.n + j] *= scale;
        }
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
  // The split variants' combines also ran shared out by every block, and
  // every kernel with one grid point a block (Run).
  EXPECT_GT(together_runs_, 0);
  EXPECT_GT(one_point_runs_, 0);
}

// A weight element's value from its index, on the device (fill_weight) and
// on the host: a multiple of 2^-12 in [-2^-5, 2^-5), exact in f16.
constexpr absl::string_view kFillWeight = R"(
extern "C" __global__ void fill_weight(unsigned short* w, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ static_cast<unsigned>(i >> 32);
    h ^= h >> 15;
    const float v = static_cast<float>(static_cast<int>((h >> 8) & 255u) - 128) * (1.0f / 4096.0f);
    unsigned short bits;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
    w[i] = bits;
  }
}
)";
double WeightValue(uint64_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32);
  h ^= h >> 15;
  return (static_cast<int>((h >> 8) & 255u) - 128) / 4096.0;
}

// At the top of the 32-bit index range: the weight [64510, 32768] (2.11e9
// elements, 4.2 GB of f16) is the largest FitsIndex32 takes with these
// tiles, its last rows' offsets within 1.6% of 2^31. It is filled on the
// device; 32 of the output's columns are checked against a CPU loop, and
// every output element must be written.
TEST_F(GpuTiledCodegen, OffsetsAtTheTopOfThe32BitIndexRangeAreRight) {
  constexpr int64_t kM = 2, kK = 64510, kN = 32768;
  const KernelGraph graph = RmsNormLinear(DType::kF16, kM, kK, kN, {.m = 2, .k = 128, .n = 64});
  ASSERT_TRUE(codegen::Emitter(graph, graph.kernels[0]).FitsIndex32());
  const std::vector<float> x = RandomValues(DType::kF16, kM * kK, 1.0f, 7);
  jit::CompileOptions options;
  options.arch = context_->info().arch();
  const std::string cubin = ValueOrFail(jit::CompileToCubin(*nvrtc_, kFillWeight, options));
  std::unique_ptr<jit::CudaModule> module = ValueOrFail(context_->LoadModule(cubin));
  jit::CudaFunction* fill_weight = ValueOrFail(module->GetFunction("fill_weight"));
  absl::StatusOr<std::vector<float>> out =
      Run(graph, {{0, x}}, 2, {}, [&](Prepared& p) -> absl::Status {
        jit::CUdeviceptr w = jit::DevicePointer(*p.buffers[1]);
        unsigned long long n = kK * kN;
        void* args[] = {&w, &n};
        jit::LaunchConfig config;
        config.block.x = 256;
        config.grid.x = 4096;
        return context_->Launch(*fill_weight, config, args);
      });
  if (!out.ok() && absl::IsResourceExhausted(out.status())) {
    GTEST_SKIP() << "needs 4.2 GB of device memory: " << out.status();
  }
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < out->size(); ++i) ASSERT_FALSE(std::isnan((*out)[i])) << "element " << i << " unwritten";
  for (int64_t i = 0; i < kM; ++i) {
    double squares = 0;
    for (int64_t j = 0; j < kK; ++j) squares += double(x[i * kK + j]) * x[i * kK + j];
    const double scale = 1.0 / std::sqrt(squares / double(kK) + 1e-6);
    for (int64_t c = 0; c < 32; ++c) {
      const int64_t col = c < 16 ? c * 2047 : kN - 1 - (c - 16) * 13;
      double sum = 0;
      for (int64_t j = 0; j < kK; ++j) sum += testing::RoundTo(DType::kF16, x[i * kK + j]) * WeightValue(j * kN + col);
      const float expected = testing::RoundTo(DType::kF16, static_cast<float>(sum * scale));
      EXPECT_NEAR((*out)[i * kN + col], expected, Tolerance(DType::kF16) * (1 + std::abs(expected)))
          << "row " << i << " column " << col;
    }
  }
}

TEST_F(GpuTiledCodegen, GatedMlpMatchesACpuLoop) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " M=", s.m, " K=", s.k, " N=", s.n));
      const float scale = 1.0f / std::sqrt(float(s.k));
      const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 3);
      const std::vector<float> w1 = RandomValues(dtype, s.k * s.n, 2 * scale, 4);
      const std::vector<float> w2 = RandomValues(dtype, s.k * s.n, scale, 5);
      const std::vector<double> gate = MatmulRef(dtype, x, w1, s.m, s.k, s.n);
      std::vector<double> expected = MatmulRef(dtype, x, w2, s.m, s.k, s.n);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
      // 64 blocks for 16 rows: a run of a row a block, lanes in groups.
      for (const Tiles& tiles : {Tiles{.k = 32}, Tiles{.k = 32, .split = 5}, Tiles{.m = 8, .k = 128, .n = 32},
                                 Tiles{.m = 16, .k = 64, .n = 64, .split = 64}}) {
        SCOPED_TRACE(absl::StrCat("tiles ", tiles.m, "x", tiles.k, "x", tiles.n, " split ", tiles.split));
        absl::StatusOr<std::vector<float>> out = Run(GatedMlp(dtype, s.m, s.k, s.n, tiles), {{0, x}, {1, w1}, {2, w2}}, 3);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
}

TEST_F(GpuTiledCodegen, GatedMlpWithSymbolicSizesMatchesACpuLoop) {
  const Symbol tokens("tokens", 64), k("k", 8192);
  const KernelGraph graph = GatedMlp(DType::kF16, tokens, k, 256);
  for (const Shape3& s : {Shape3{1, 4097, 256}, Shape3{17, 127, 256}, Shape3{5, 0, 256}}) {
    SCOPED_TRACE(absl::StrCat("M=", s.m, " K=", s.k));
    const DType dtype = DType::kF16;
    const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 6);
    const std::vector<float> w1 = RandomValues(dtype, s.k * s.n, 0.05f, 7);
    const std::vector<float> w2 = RandomValues(dtype, s.k * s.n, 0.05f, 8);
    absl::StatusOr<std::vector<float>> out =
        Run(graph, {{0, x}, {1, w1}, {2, w2}}, 3, {{tokens, s.m}, {k, s.k}});
    if (SymbolicDimsRefused(out.status())) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> gate = MatmulRef(dtype, x, w1, s.m, s.k, s.n);
    std::vector<double> expected = MatmulRef(dtype, x, w2, s.m, s.k, s.n);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
    EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), 1e-2, 1e-2));
  }
}

TEST_F(GpuTiledCodegen, LoraMatchesACpuLoop) {
  // Rank 12: X @ A's register sums in vectors of 8 columns, the last one
  // past A's (the flush's rows are the vectors' width, not A's).
  for (const int64_t kRank : {16, 12}) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      for (const Shape3& s : kShapes) {
        SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rank ", kRank, " M=", s.m, " K=", s.k, " N=", s.n));
        const float scale = 1.0f / std::sqrt(float(s.k));
        const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 9);
        const std::vector<float> w = RandomValues(dtype, s.k * s.n, scale, 10);
        const std::vector<float> a = RandomValues(dtype, s.k * kRank, scale, 11);
        const std::vector<float> b = RandomValues(dtype, kRank * s.n, 0.25f, 12);
        absl::StatusOr<std::vector<float>> out =
            Run(Lora(dtype, s.m, s.k, s.n, kRank), {{0, x}, {1, w}, {2, a}, {3, b}}, 4);
        ASSERT_TRUE(out.ok()) << out.status();
        absl::StatusOr<std::vector<float>> split =
            Run(Lora(dtype, s.m, s.k, s.n, kRank, {.split = 2}), {{0, x}, {1, w}, {2, a}, {3, b}}, 4);
        ASSERT_TRUE(split.ok()) << split.status();
        // All rows a block, 32 columns: both products on tensor cores.
        absl::StatusOr<std::vector<float>> narrow =
            Run(Lora(dtype, s.m, s.k, s.n, kRank, {.m = 16, .k = 128, .n = 32}), {{0, x}, {1, w}, {2, a}, {3, b}}, 4);
        ASSERT_TRUE(narrow.ok()) << narrow.status();
        // X @ A is an f32 sum the second matmul rounds to its dtype.
        const std::vector<double> xa = MatmulRef(DType::kF32, x, a, s.m, s.k, kRank);
        std::vector<float> xa_rounded(xa.size());
        for (size_t i = 0; i < xa.size(); ++i) xa_rounded[i] = static_cast<float>(xa[i]);
        const std::vector<double> xab = MatmulRef(dtype, xa_rounded, b, s.m, kRank, s.n);
        std::vector<double> expected = MatmulRef(dtype, x, w, s.m, s.k, s.n);
        for (size_t i = 0; i < expected.size(); ++i) expected[i] += xab[i];
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
        EXPECT_TRUE(testing::AllClose(*split, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
        EXPECT_TRUE(testing::AllClose(*narrow, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
}

// MLA's attention over its latent with W_uv applied in its combine, each
// head's row of P C times the head's matrix (TileOp::kRowMatmul, the
// search's FuseRowProduct), as a kernel of its own: t = q W_uk^T, C and
// W_uv in. Run by the last block's combine and, where the grid fits, by
// every block's share, the same to the bit; both against a CPU loop. The
// search prefers a row's blocks in a cluster (each a run of the row and of
// k, W_uv's run loaded before the meeting, the runs' sums read from the
// cluster's shared memory), where a shape allows one: at 4096 and 4097
// keys (16 heads, 64 blocks: clusters of 4), 13 heads (52 of the 64 blocks
// have a row; the rest make clusters with none) and W_uv's 6 columns
// (clusters of 2). Else a row a block: 17 columns (no 16-byte vectors, no
// shuffles), 2 and 3 heads, 17 and 127 keys.
TEST_F(GpuTiledCodegen, MlaAttentionWithItsRowProductMatchesACpuLoop) {
  const int before = together_runs_, clustered = cluster_runs_;
  for (const auto& [h, latent, d, keys] : std::vector<std::array<int64_t, 4>>{{16, 256, 64, 4096},
                                                                             {3, 48, 17, 127},
                                                                             {2, 64, 32, 17},
                                                                             {16, 256, 64, 4097},
                                                                             {13, 128, 16, 1000},
                                                                             {16, 256, 6, 4096}}) {
    SCOPED_TRACE(absl::StrCat(h, "x", latent, "x", d, "x", keys));
    const search::FusedCase c = search::MlaCase(h, latent, d, keys);
    search::SearchOptions options;
    options.time_top = 64;
    options.time_graph = [](const KernelGraph& g) -> absl::StatusOr<double> {
      if (g.kernels.size() != 2) return 3.0;
      return search::ClusterFastest(g);
    };
    const search::SearchResult r = ValueOrFail(search::Superoptimize(c.region, options));
    ASSERT_TRUE(r.graph.has_value() && r.graph->kernels.size() == 2u) << r.report.ToString();
    // The region's tensors: q, W_uk, C, W_uv, the output, then t.
    KernelGraph attention = *r.graph;
    attention.kernels.erase(attention.kernels.begin());
    ASSERT_EQ(attention.tensors.size(), 6u);
    attention.tensors[5].role = TensorRole::kInput;
    const std::vector<float> t = RandomValues(DType::kF16, h * latent, 1.0f / std::sqrt(float(latent)), 21);
    const std::vector<float> cache = RandomValues(DType::kF16, keys * latent, 1.0f, 22);
    const std::vector<float> wuv = RandomValues(DType::kF16, h * latent * d, 1.0f / std::sqrt(float(latent)), 23);
    absl::StatusOr<std::vector<float>> out = Run(attention, {{5, t}, {2, cache}, {3, wuv}}, 4);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> expected(h * d, 0.0);
    for (int64_t head = 0; head < h; ++head) {
      std::vector<double> scores(keys), o(latent, 0.0);
      double top = -1e300, sum = 0;
      for (int64_t k = 0; k < keys; ++k) {
        for (int64_t l = 0; l < latent; ++l) scores[k] += double(t[head * latent + l]) * cache[k * latent + l];
        top = std::max(top, scores[k]);
      }
      for (int64_t k = 0; k < keys; ++k) {
        const double p = std::exp(scores[k] - top);
        sum += p;
        for (int64_t l = 0; l < latent; ++l) o[l] += p * cache[k * latent + l];
      }
      for (int64_t l = 0; l < latent; ++l) {
        const double stored = testing::RoundTo(DType::kF16, static_cast<float>(o[l] / sum));  // P C as f16
        for (int64_t j = 0; j < d; ++j) expected[head * d + j] += stored * wuv[(head * latent + l) * d + j];
      }
    }
    EXPECT_TRUE(testing::AllClose(*out, Stored(DType::kF16, expected), 1e-2, 1e-2));
  }
  EXPECT_GE(together_runs_ - before, 4) << "the combine shared out, each block's row times its W_uv";
  EXPECT_GE(cluster_runs_ - clustered, 4) << "a row's blocks in a cluster";
}

// Not a pass/fail test: how close decode-shaped kernels come to memory
// bandwidth (the weights dominate the bytes).
TEST_F(GpuTiledCodegen, ReportsBandwidthAtDecodeShapes) {
  struct Case {
    const char* name;
    KernelGraph graph;
    int64_t m, k, n, weights;
  };
  const Case cases[] = {
      {"rmsnorm+linear", RmsNormLinear(DType::kF16, 1, 2048, 2048), 1, 2048, 2048, 1},
      {"rmsnorm+linear", RmsNormLinear(DType::kF16, 16, 2048, 2048), 16, 2048, 2048, 1},
      {"gated mlp", GatedMlp(DType::kF16, 1, 2048, 8192), 1, 2048, 8192, 2},
      {"gated mlp", GatedMlp(DType::kF16, 16, 2048, 8192), 16, 2048, 8192, 2},
      {"lora", Lora(DType::kF16, 1, 4096, 4096, 16), 1, 4096, 4096, 1},
  };
  for (const Case& c : cases) ReportBandwidth(c.name, c.graph, c.m, c.k, c.n, c.weights);
}

// Not a pass/fail test either: tile and split choices at the shapes of
// ../shared/bench/peers.py (the cost model's evidence).
TEST_F(GpuTiledCodegen, ReportsSplitLoopsAtPeerShapes) {
  for (int64_t n : {64, 128}) {
    for (int64_t k : {64, 128, 256}) {
      for (int64_t split : {1, 4, 8, 16}) {
        const std::string name = absl::StrCat("tiles n", n, " k", k, " split ", split, ": ");
        for (int64_t m : {2, 16}) {
          ReportBandwidth(absl::StrCat(name, "rmsnorm_linear_bs", m / 2),
                          RmsNormLinear(DType::kF16, m, 4096, 6144, {.m = m, .k = k, .n = n, .split = split}), m,
                          4096, 6144, 1);
        }
        for (int64_t m : {4, 8}) {
          ReportBandwidth(absl::StrCat(name, "m", m, " gated_mlp_bs8"),
                          GatedMlp(DType::kF16, 8, 4096, 4096, {.m = m, .k = k, .n = n, .split = split}), 8, 4096,
                          4096, 2);
        }
      }
    }
  }
}

void GpuTiledCodegen::ReportBandwidth(const std::string& name, const KernelGraph& graph, int64_t m, int64_t k,
                                      int64_t n, int64_t weights) {
  std::map<int, std::vector<float>> inputs;
  for (int t : graph.kernels[0].inputs) {
    int64_t count = 1;
    for (const Dim& d : graph.tensors[t].shape) count *= d.value();
    inputs[t] = RandomValues(DType::kF16, count, 0.05f, static_cast<uint32_t>(t));
  }
  absl::StatusOr<Prepared> p = Prepare(graph, inputs, {});
  if (!p.ok()) {
    std::cout << name << ": " << p.status() << "\n";  // tiles too large for shared memory, say
    return;
  }
  absl::StatusOr<double> us = Time(*p, 50);
  ASSERT_TRUE(us.ok()) << us.status();
  const double bytes = 2.0 * (weights * k * n + m * k + m * n);
  std::cout << name << " M=" << m << " K=" << k << " N=" << n << ": " << *us << " us, " << bytes / (*us * 1e3)
            << " GB/s\n";
}

}  // namespace
}  // namespace kiln
