// The CUDA runtime on a real GPU (ctest label `gpu`). Where there is no
// driver or device every test skips, saying why.
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/cuda_context.h"
#include "jit/kernel_cache.h"
#include "jit/module_cache.h"
#include "jit/nvrtc_api.h"
#include "jit/nvrtc_compiler.h"

namespace kiln::jit {
namespace {

using ::testing::HasSubstr;

constexpr absl::string_view kKernels = R"(
extern "C" __global__ void times_two(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * i;
}

extern "C" __global__ void add_index(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += i;
}

extern "C" __global__ void big_shared(float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = static_cast<float>(i);
  __syncthreads();
  if (threadIdx.x == 0) {
    out[0] = tile[0];
    out[1] = tile[n - 1];
  }
}

// Each block keeps its index in shared memory and, after its cluster's
// barrier, reads the next block's of the cluster (rank + 1, wrapping)
// from that block's shared memory.
extern "C" __global__ void cluster_neighbour(int* out) {
#if __CUDA_ARCH__ >= 900
  __shared__ int mine;
  if (threadIdx.x == 0) mine = blockIdx.x;
  unsigned rank, size;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  if (threadIdx.x == 0) {
    const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(&mine));
    unsigned remote;
    int theirs;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % size));
    asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(theirs) : "r"(remote) : "memory");
    out[blockIdx.x] = theirs;
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
extern "C" __global__ void spin(long long cycles, int* out) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  out[threadIdx.x] = 1;
}

// Lets the kernel after it start at once (where that kernel was launched
// early), then spins before it doubles its element: a kernel launched early
// that did not wait would read the element before it doubled.
extern "C" __global__ void let_next_start_then_double(long long cycles, int* out) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  out[threadIdx.x] *= 2;
}

// Waits for the kernel before it (griddepcontrol.wait, as kiln's generated
// kernels do first: wait_for_prior_grid), then adds one.
extern "C" __global__ void wait_then_add_one(int* out) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  out[threadIdx.x] += 1;
}

// The same, having first asked L2 for its element's line before the wait
// (kiln's prefetch_l2, which streaming kernels issue while the kernel
// before runs): L2 takes that kernel's write, so the read after the wait
// still sees it.
extern "C" __global__ void prefetch_wait_then_add_one(int* out) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(out + threadIdx.x));
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  out[threadIdx.x] += 1;
}

extern "C" __global__ void to_half(const float* in, unsigned short* out) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[threadIdx.x]));
  out[threadIdx.x] = h;
}

// One warp multiplies a 16x16 matrix of ones by a 16x8 matrix of ones: every
// output is 16 whatever the fragment layout.
extern "C" __global__ void mma_ones(float* d) {
  const unsigned ones = 0x3C003C00u;  // two f16 1.0s
  float d0, d1, d2, d3;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
      : "r"(ones), "r"(ones), "r"(ones), "r"(ones), "r"(ones), "r"(ones),
        "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f));
  float* out = d + 4 * threadIdx.x;
  out[0] = d0; out[1] = d1; out[2] = d2; out[3] = d3;
}
)";

class GpuRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CudaContext>> context = CudaContext::Create(0);
    if (!context.ok()) GTEST_SKIP() << "no CUDA device: " << context.status();
    context_ = *std::move(context);
  }

  // The test kernels, compiled for this device.
  std::unique_ptr<CudaModule> LoadKernels() {
    absl::StatusOr<const NvrtcApi*> nvrtc = LoadNvrtc();
    EXPECT_TRUE(nvrtc.ok()) << nvrtc.status();
    if (!nvrtc.ok()) return nullptr;
    CompileOptions options;
    options.arch = context_->info().arch();
    absl::StatusOr<std::string> cubin = CompileToCubin(**nvrtc, kKernels, options);
    EXPECT_TRUE(cubin.ok()) << cubin.status();
    if (!cubin.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<CudaModule>> module = context_->LoadModule(*cubin);
    EXPECT_TRUE(module.ok()) << module.status();
    return module.ok() ? *std::move(module) : nullptr;
  }

  std::shared_ptr<Storage> Allocate(size_t bytes) {
    absl::StatusOr<std::shared_ptr<Storage>> storage = context_->Allocate(bytes);
    EXPECT_TRUE(storage.ok()) << storage.status();
    return storage.ok() ? *storage : nullptr;
  }

  std::unique_ptr<CudaContext> context_;
};

TEST_F(GpuRuntime, DeviceQueryIsSane) {
  const DeviceInfo& info = context_->info();
  std::cout << info.ToString() << "\n";
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.compute_major, 7);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_EQ(info.warp_size, 32);
  EXPECT_GE(info.max_threads_per_block, 1024);
  EXPECT_EQ(info.shared_memory_per_block, 48 * 1024);
  EXPECT_GE(info.shared_memory_per_block_optin, info.shared_memory_per_block);
  EXPECT_GE(info.shared_memory_per_sm, info.shared_memory_per_block_optin);
  EXPECT_GT(info.l2_cache_bytes, 0);
  EXPECT_GT(info.total_memory_bytes, int64_t{1} << 30);
  EXPECT_GE(info.driver_version, 12000);
  EXPECT_EQ(info.arch(), info.compute_major == 9 && info.compute_minor == 0
                             ? std::string("sm_90a")
                             : absl::StrCat("sm_", info.compute_major, info.compute_minor));
  EXPECT_EQ(context_->device(), Device::Cuda(0));
  EXPECT_NE(context_->stream(), nullptr);
}

TEST_F(GpuRuntime, SharedContextIsCreatedOnce) {
  absl::StatusOr<CudaContext*> a = CudaContext::Shared(0);
  absl::StatusOr<CudaContext*> b = CudaContext::Shared(0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, *b);
  absl::StatusOr<CudaContext*> missing = CudaContext::Shared(1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GpuRuntime, AllocatorReusesAFreedBlock) {
  std::shared_ptr<Storage> first = Allocate(1000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->device(), Device::Cuda(0));
  const CUdeviceptr address = DevicePointer(*first);
  EXPECT_NE(address, 0u);
  first.reset();
  const AllocatorStats before = context_->allocator().stats();
  EXPECT_EQ(before.bytes_cached, 1024);
  std::shared_ptr<Storage> second = Allocate(1000);
  EXPECT_EQ(DevicePointer(*second), address);
  const AllocatorStats after = context_->allocator().stats();
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(after.backend_allocations, before.backend_allocations);
  second.reset();
  ASSERT_TRUE(context_->allocator().ReleaseCache().ok());
  EXPECT_EQ(context_->allocator().stats().bytes_cached, 0);
}

TEST_F(GpuRuntime, HostDeviceHostRoundTripOfOddSizes) {
  std::mt19937 rng(7);
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{17}, size_t{127}, size_t{4097},
                       size_t{(1 << 20) + 3}}) {
    SCOPED_TRACE(bytes);
    std::vector<uint8_t> data(bytes);
    for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
    std::shared_ptr<Storage> a = Allocate(bytes);
    std::shared_ptr<Storage> b = Allocate(bytes);
    ASSERT_TRUE(context_->CopyHostToDevice(DevicePointer(*a), data.data(), bytes).ok());
    ASSERT_TRUE(context_->CopyDeviceToDevice(DevicePointer(*b), DevicePointer(*a), bytes).ok());
    std::vector<uint8_t> back(bytes, 0);
    ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), DevicePointer(*b), bytes).ok());
    EXPECT_EQ(back, data);
  }
}

TEST_F(GpuRuntime, MemsetSetsEveryByte) {
  constexpr size_t kBytes = 4097;
  std::shared_ptr<Storage> buffer = Allocate(kBytes);
  ASSERT_TRUE(context_->Memset(DevicePointer(*buffer), 0xAB, kBytes).ok());
  ASSERT_TRUE(context_->Memset(DevicePointer(*buffer) + 10, 0x00, 5).ok());
  std::vector<uint8_t> back(kBytes);
  ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), DevicePointer(*buffer), kBytes).ok());
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(back[i], i >= 10 && i < 15 ? 0x00 : 0xAB) << "byte " << i;
  }
}

TEST_F(GpuRuntime, LaunchWritesEveryElement) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CudaFunction*> times_two = module->GetFunction("times_two");
  ASSERT_TRUE(times_two.ok()) << times_two.status();
  constexpr int kN = 100003;  // not a multiple of the block size
  std::shared_ptr<Storage> out = Allocate((kN + 1) * sizeof(int));
  // Poison, including one element past the end that must stay untouched.
  ASSERT_TRUE(context_->Memset(DevicePointer(*out), 0xFF, (kN + 1) * sizeof(int)).ok());
  CUdeviceptr ptr = DevicePointer(*out);
  int n = kN;
  void* args[] = {&ptr, &n};
  LaunchConfig config;
  config.block.x = 256;
  config.grid.x = (kN + 255) / 256;
  ASSERT_TRUE(context_->Launch(**times_two, config, args).ok());
  std::vector<int> back(kN + 1);
  ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
  for (int i = 0; i < kN; ++i) ASSERT_EQ(back[i], 2 * i) << "element " << i;
  EXPECT_EQ(back[kN], -1);
}

// Blocks launched in clusters (sm_90 and later) read one another's shared
// memory, cooperatively too (a split loop's row product: see
// KernelSource::split_cluster); ResidentBlocks counts whole clusters, and
// a grid the clusters do not divide is a clear error.
TEST_F(GpuRuntime, ClusterLaunchReadsAnotherBlocksSharedMemory) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  CudaFunction* neighbour = *module->GetFunction("cluster_neighbour");
  constexpr int kBlocks = 16;
  std::shared_ptr<Storage> out = Allocate(kBlocks * sizeof(int));
  CUdeviceptr ptr = DevicePointer(*out);
  void* args[] = {&ptr};
  LaunchConfig config;
  config.block.x = 64;
  config.grid.x = kBlocks;
  config.cluster.x = 4;
  if (context_->info().compute_major < 9) {
    const absl::Status status = context_->Launch(*neighbour, config, args);
    EXPECT_THAT(status.message(), HasSubstr("need sm_90 or later"));
    EXPECT_EQ(*context_->ResidentBlocks(*neighbour, 64, 0, config.cluster), 0);
    GTEST_SKIP() << "clusters need sm_90 or later; " << context_->info().ToString();
  }
  absl::StatusOr<int64_t> resident = context_->ResidentBlocks(*neighbour, 64, 0, config.cluster);
  ASSERT_TRUE(resident.ok()) << resident.status();
  EXPECT_GE(*resident, kBlocks);
  EXPECT_EQ(*resident % 4, 0);
  for (const bool cooperative : {false, true}) {
    ASSERT_TRUE(context_->Memset(ptr, 0xFF, kBlocks * sizeof(int)).ok());
    config.cooperative = cooperative;
    const absl::Status launched = context_->Launch(*neighbour, config, args);
    ASSERT_TRUE(launched.ok()) << launched;
    std::vector<int> back(kBlocks);
    ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
    for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(back[b], b / 4 * 4 + (b + 1) % 4) << "block " << b;
  }
  config.grid.x = kBlocks + 2;
  const absl::Status status = context_->Launch(*neighbour, config, args);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("clusters of 4x1x1"));
  EXPECT_TRUE(context_->Synchronize().ok());
}

// A cooperative launch (split loops whose blocks wait for one another)
// takes the grid the device holds at once, and a larger one is a clear
// error that leaves the context usable.
TEST_F(GpuRuntime, CooperativeLaunchTakesAResidentGridAndRefusesALargerOne) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  CudaFunction* times_two = *module->GetFunction("times_two");
  absl::StatusOr<int64_t> resident = context_->ResidentBlocks(*times_two, 256, 0);
  ASSERT_TRUE(resident.ok()) << resident.status();
  EXPECT_GE(*resident, context_->info().sm_count);
  const int n = static_cast<int>(*resident * 256);
  std::shared_ptr<Storage> out = Allocate((n + 256) * sizeof(int));
  ASSERT_TRUE(context_->Memset(DevicePointer(*out), 0xFF, (n + 256) * sizeof(int)).ok());
  CUdeviceptr ptr = DevicePointer(*out);
  int count = n;
  void* args[] = {&ptr, &count};
  LaunchConfig config;
  config.block.x = 256;
  config.grid.x = static_cast<unsigned>(*resident);
  config.cooperative = true;
  absl::Status launched = context_->Launch(*times_two, config, args);
  ASSERT_TRUE(launched.ok()) << launched;
  std::vector<int> back(n);
  ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[i], 2 * i) << "element " << i;

  config.grid.x += 1;
  count = n + 256;
  absl::Status status = context_->Launch(*times_two, config, args);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("cooperative launch of kernel 'times_two'"));
  EXPECT_TRUE(context_->Synchronize().ok());
  config.cooperative = false;
  EXPECT_TRUE(context_->Launch(*times_two, config, args).ok());
  EXPECT_TRUE(context_->Synchronize().ok());
}

TEST_F(GpuRuntime, InlinePtxAndMmaRun) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  const std::vector<float> in = {1.0f, -2.0f, 0.5f, 65504.0f};
  std::shared_ptr<Storage> in_dev = Allocate(in.size() * sizeof(float));
  std::shared_ptr<Storage> half_dev = Allocate(in.size() * sizeof(uint16_t));
  ASSERT_TRUE(context_->CopyHostToDevice(DevicePointer(*in_dev), in.data(), in.size() * 4).ok());
  CUdeviceptr in_ptr = DevicePointer(*in_dev);
  CUdeviceptr half_ptr = DevicePointer(*half_dev);
  void* half_args[] = {&in_ptr, &half_ptr};
  LaunchConfig four;
  four.block.x = 4;
  ASSERT_TRUE(context_->Launch(**module->GetFunction("to_half"), four, half_args).ok());
  std::vector<uint16_t> halves(4);
  ASSERT_TRUE(context_->CopyDeviceToHost(halves.data(), half_ptr, 8).ok());
  EXPECT_THAT(halves, ::testing::ElementsAre(0x3C00, 0xC000, 0x3800, 0x7BFF));

  std::shared_ptr<Storage> d = Allocate(32 * 4 * sizeof(float));
  CUdeviceptr d_ptr = DevicePointer(*d);
  void* mma_args[] = {&d_ptr};
  LaunchConfig warp;
  warp.block.x = 32;
  ASSERT_TRUE(context_->Launch(**module->GetFunction("mma_ones"), warp, mma_args).ok());
  std::vector<float> result(32 * 4);
  ASSERT_TRUE(context_->CopyDeviceToHost(result.data(), d_ptr, result.size() * 4).ok());
  for (float value : result) ASSERT_EQ(value, 16.0f);
}

TEST_F(GpuRuntime, HundredKilobytesOfDynamicSharedMemory) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CudaFunction*> big = module->GetFunction("big_shared");
  ASSERT_TRUE(big.ok()) << big.status();
  constexpr unsigned kBytes = 100 * 1024;
  if (context_->info().shared_memory_per_block_optin < static_cast<int>(kBytes)) {
    GTEST_SKIP() << "this GPU cannot give a block 100 KiB of shared memory";
  }
  EXPECT_LE((*big)->dynamic_shared_limit(), 48 * 1024);
  std::shared_ptr<Storage> out = Allocate(2 * sizeof(float));
  CUdeviceptr ptr = DevicePointer(*out);
  int n = kBytes / sizeof(float);
  void* args[] = {&ptr, &n};
  LaunchConfig config;
  config.block.x = 256;
  config.dynamic_shared_bytes = kBytes;
  absl::Status launched = context_->Launch(**big, config, args);
  ASSERT_TRUE(launched.ok()) << launched;
  EXPECT_GE((*big)->dynamic_shared_limit(), static_cast<int>(kBytes));
  float back[2] = {-1, -1};
  ASSERT_TRUE(context_->CopyDeviceToHost(back, ptr, sizeof(back)).ok());
  EXPECT_EQ(back[0], 0.0f);
  EXPECT_EQ(back[1], static_cast<float>(n - 1));
}

TEST_F(GpuRuntime, SharedMemoryBeyondTheOptInLimitIsAClearError) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  CudaFunction* big = *module->GetFunction("big_shared");
  std::shared_ptr<Storage> out = Allocate(2 * sizeof(float));
  CUdeviceptr ptr = DevicePointer(*out);
  int n = 16;
  void* args[] = {&ptr, &n};
  LaunchConfig config;
  config.block.x = 32;
  config.dynamic_shared_bytes = context_->info().shared_memory_per_block_optin + 1;
  absl::Status status = context_->Launch(*big, config, args);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("kernel 'big_shared'"));
  EXPECT_THAT(status.message(), HasSubstr("opt-in limit"));
  // The context is still usable.
  EXPECT_TRUE(context_->Synchronize().ok());
}

TEST_F(GpuRuntime, BadLaunchesAndLookupsAreErrors) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CudaFunction*> missing = module->GetFunction("no_such_kernel");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such_kernel"));
  CudaFunction* times_two = *module->GetFunction("times_two");
  EXPECT_EQ(*module->GetFunction("times_two"), times_two);  // looked up once
  CUdeviceptr ptr = 0;
  int n = 0;
  void* args[] = {&ptr, &n};
  LaunchConfig empty;
  empty.block.x = 0;
  EXPECT_EQ(context_->Launch(*times_two, empty, args).code(), absl::StatusCode::kInvalidArgument);
  LaunchConfig too_wide;
  too_wide.block.x = 4096;
  absl::Status status = context_->Launch(*times_two, too_wide, args);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("threads per block"));
  absl::StatusOr<std::unique_ptr<CudaModule>> garbage = context_->LoadModule("not a cubin");
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("cuModuleLoadData"));
  EXPECT_TRUE(context_->Synchronize().ok());
}

// Launched early, a kernel's blocks start while the kernel before it runs;
// waiting for it, it still reads what that kernel wrote, where it asked L2
// for those lines before the wait too. Cooperative too.
TEST_F(GpuRuntime, AnEarlyLaunchWaitsForTheKernelBeforeIt) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  CudaFunction* doubler = *module->GetFunction("let_next_start_then_double");
  constexpr int kThreads = 64;
  std::shared_ptr<Storage> out = Allocate(kThreads * sizeof(int));
  CUdeviceptr ptr = DevicePointer(*out);
  long long cycles = 200000;
  void* double_args[] = {&cycles, &ptr};
  void* add_args[] = {&ptr};
  LaunchConfig config;
  config.block.x = kThreads;
  for (const bool cooperative : {false, true}) {
    for (const char* name : {"wait_then_add_one", "prefetch_wait_then_add_one"}) {
      SCOPED_TRACE(name);
      CudaFunction* add_one = *module->GetFunction(name);
      ASSERT_TRUE(context_->Memset(ptr, 0, kThreads * sizeof(int)).ok());
      // x -> 2x + 1, 16 times: 2^16 - 1 only if every step ran in order.
      for (int round = 0; round < 16; ++round) {
        config.early = false;
        config.cooperative = false;
        ASSERT_TRUE(context_->Launch(*doubler, config, double_args).ok());
        config.early = true;
        config.cooperative = cooperative;
        absl::Status launched = context_->Launch(*add_one, config, add_args);
        ASSERT_TRUE(launched.ok()) << launched;
      }
      std::vector<int> back(kThreads);
      ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
      for (int i = 0; i < kThreads; ++i) {
        ASSERT_EQ(back[i], 65535) << "element " << i << ", cooperative " << cooperative;
      }
    }
  }
}

TEST_F(GpuRuntime, AGraphReplaysTheCapturedLaunchesEachTime) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CudaFunction*> add_index = module->GetFunction("add_index");
  ASSERT_TRUE(add_index.ok()) << add_index.status();
  constexpr int kN = 4097;
  std::shared_ptr<Storage> out = Allocate(kN * sizeof(int));
  CUdeviceptr ptr = DevicePointer(*out);
  ASSERT_TRUE(context_->Memset(ptr, 0, kN * sizeof(int)).ok());
  int n = kN;
  void* args[] = {&ptr, &n};
  LaunchConfig config;
  config.block.x = 128;
  config.grid.x = (kN + 127) / 128;
  // Two launches captured: nothing runs until the graph is launched.
  absl::StatusOr<CudaGraph> graph = context_->CaptureGraph([&]() -> absl::Status {
    for (int i = 0; i < 2; ++i) {
      if (absl::Status s = context_->Launch(**add_index, config, args); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int> back(kN);
  ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
  EXPECT_EQ(back[kN - 1], 0);
  for (int replay = 0; replay < 3; ++replay) ASSERT_TRUE(graph->Launch().ok());
  ASSERT_TRUE(context_->CopyDeviceToHost(back.data(), ptr, back.size() * sizeof(int)).ok());
  for (int i = 0; i < kN; ++i) ASSERT_EQ(back[i], 6 * i) << "element " << i;
}

TEST_F(GpuRuntime, AFailedCaptureLeavesTheStreamUsable) {
  absl::StatusOr<CudaGraph> graph =
      context_->CaptureGraph([]() -> absl::Status { return absl::InternalError("enqueue failed"); });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("enqueue failed"));
  // The stream left capture mode: ordinary work runs.
  std::shared_ptr<Storage> out = Allocate(64);
  EXPECT_TRUE(context_->Memset(DevicePointer(*out), 0, 64).ok());
  EXPECT_TRUE(context_->Synchronize().ok());
}

TEST_F(GpuRuntime, EventsMeasureAPositiveTime) {
  std::unique_ptr<CudaModule> module = LoadKernels();
  ASSERT_NE(module, nullptr);
  std::shared_ptr<Storage> out = Allocate(32 * sizeof(int));
  CUdeviceptr ptr = DevicePointer(*out);
  long long cycles = 2'000'000;  // about a millisecond
  void* args[] = {&cycles, &ptr};
  LaunchConfig config;
  config.block.x = 32;
  absl::StatusOr<CudaEvent> start = context_->CreateEvent();
  absl::StatusOr<CudaEvent> end = context_->CreateEvent();
  ASSERT_TRUE(start.ok() && end.ok()) << start.status() << end.status();
  ASSERT_TRUE(start->Record().ok());
  ASSERT_TRUE(context_->Launch(**module->GetFunction("spin"), config, args).ok());
  ASSERT_TRUE(end->Record().ok());
  absl::StatusOr<float> ms = CudaEvent::ElapsedMilliseconds(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0f);
  EXPECT_LT(*ms, 10000.0f);
}

TEST_F(GpuRuntime, KernelAndModuleCachesLoadOnce) {
  absl::StatusOr<const NvrtcApi*> nvrtc = LoadNvrtc();
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status();
  std::unique_ptr<KernelCache> kernels = KernelCache::WithNvrtc(
      CacheOptions{.disk = false}, **nvrtc, context_->info().driver_version);
  ModuleCache modules(*context_);
  CompileOptions options;
  options.arch = context_->info().arch();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<CachedKernel> kernel = kernels->GetOrCompile(kKernels, options);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    absl::StatusOr<CudaModule*> module = modules.GetOrLoad(*kernel);
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_TRUE((*module)->GetFunction("times_two").ok());
  }
  EXPECT_EQ(kernels->stats().compiles, 1);
  EXPECT_EQ(kernels->stats().memory_hits, 1);
  EXPECT_EQ(modules.size(), 1u);
}

}  // namespace
}  // namespace kiln::jit
