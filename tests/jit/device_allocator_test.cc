// The caching allocator's policy, over a fake backend (no GPU needed).
#include "jit/device_allocator.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::jit {
namespace {

using ::testing::HasSubstr;

// Hands out fake addresses and enforces a capacity, like a small GPU.
struct FakeDevice {
  size_t capacity = size_t{1} << 40;
  size_t used = 0;
  CUdeviceptr next = 0x100000;
  absl::flat_hash_map<CUdeviceptr, size_t> live;
  int allocations = 0;
  int frees = 0;

  DeviceMemoryBackend Backend() {
    DeviceMemoryBackend backend;
    backend.allocate = [this](size_t bytes) -> absl::StatusOr<CUdeviceptr> {
      if (used + bytes > capacity) {
        return absl::ResourceExhaustedError("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
      }
      const CUdeviceptr ptr = next;
      next += bytes;
      used += bytes;
      live[ptr] = bytes;
      ++allocations;
      return ptr;
    };
    backend.free = [this](CUdeviceptr ptr) -> absl::Status {
      auto it = live.find(ptr);
      if (it == live.end()) return absl::InternalError("double free");
      used -= it->second;
      live.erase(it);
      ++frees;
      return absl::OkStatus();
    };
    return backend;
  }
};

TEST(JitAllocator, SizeClasses) {
  EXPECT_EQ(*DeviceAllocator::SizeClass(0), 512u);
  EXPECT_EQ(*DeviceAllocator::SizeClass(1), 512u);
  EXPECT_EQ(*DeviceAllocator::SizeClass(512), 512u);
  EXPECT_EQ(*DeviceAllocator::SizeClass(513), 1024u);
  EXPECT_EQ(*DeviceAllocator::SizeClass(4097), 8192u);
  EXPECT_EQ(*DeviceAllocator::SizeClass((1 << 19) + 1), size_t{1} << 20);
  EXPECT_EQ(*DeviceAllocator::SizeClass(1 << 20), size_t{1} << 20);
  EXPECT_EQ(*DeviceAllocator::SizeClass((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(*DeviceAllocator::SizeClass((5 << 20) + (1 << 19)), size_t{6} << 20);
  absl::StatusOr<size_t> huge = DeviceAllocator::SizeClass(SIZE_MAX);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(JitAllocator, FreedBlockIsReusedForTheSameClass) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  absl::StatusOr<CUdeviceptr> a = allocator->Allocate(1000);
  ASSERT_TRUE(a.ok());
  allocator->Free(*a);
  absl::StatusOr<CUdeviceptr> b = allocator->Allocate(1024);  // same 1 KiB class
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.allocations, 2);
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(stats.backend_allocations, 1);
  EXPECT_EQ(device.allocations, 1);
  allocator->Free(*b);
}

TEST(JitAllocator, DifferentClassesDoNotShareBlocks) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  const CUdeviceptr small = *allocator->Allocate(100);
  allocator->Free(small);
  const CUdeviceptr large = *allocator->Allocate(5000);
  EXPECT_NE(large, small);
  EXPECT_EQ(allocator->stats().cache_hits, 0);
  allocator->Free(large);
}

TEST(JitAllocator, StatsTrackBytesInUseAndCached) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  const CUdeviceptr a = *allocator->Allocate(100);      // 512
  const CUdeviceptr b = *allocator->Allocate(3 << 20);  // 3 MiB
  EXPECT_EQ(allocator->stats().bytes_in_use, 512 + (3 << 20));
  EXPECT_EQ(allocator->stats().bytes_cached, 0);
  allocator->Free(b);
  EXPECT_EQ(allocator->stats().bytes_in_use, 512);
  EXPECT_EQ(allocator->stats().bytes_cached, 3 << 20);
  EXPECT_EQ(allocator->stats().peak_bytes_reserved, 512 + (3 << 20));
  allocator->Free(a);
  EXPECT_EQ(allocator->stats().bytes_in_use, 0);
}

TEST(JitAllocator, ReleaseCacheFreesPooledBlocks) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  std::vector<CUdeviceptr> blocks;
  for (size_t bytes : {100, 2000, 70000, 3000000}) blocks.push_back(*allocator->Allocate(bytes));
  for (CUdeviceptr ptr : blocks) allocator->Free(ptr);
  EXPECT_EQ(device.live.size(), 4u);
  ASSERT_TRUE(allocator->ReleaseCache().ok());
  EXPECT_TRUE(device.live.empty());
  EXPECT_EQ(allocator->stats().bytes_cached, 0);
  EXPECT_EQ(allocator->stats().backend_frees, 4);
  // Nothing pooled any more: the next allocation goes to the backend.
  const CUdeviceptr again = *allocator->Allocate(100);
  EXPECT_EQ(allocator->stats().cache_hits, 0);
  allocator->Free(again);
}

TEST(JitAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeDevice device;
  device.capacity = 3 << 20;
  auto allocator = DeviceAllocator::Create(device.Backend());
  const CUdeviceptr one = *allocator->Allocate(1 << 20);
  const CUdeviceptr two = *allocator->Allocate(2 << 20);
  allocator->Free(one);
  allocator->Free(two);
  // 3 MiB is free only once the pooled 1 and 2 MiB blocks are given back.
  absl::StatusOr<CUdeviceptr> three = allocator->Allocate(3 << 20);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(allocator->stats().cache_flushes, 1);
  EXPECT_EQ(allocator->stats().backend_frees, 2);
  allocator->Free(*three);
}

TEST(JitAllocator, OutOfMemoryIsResourceExhausted) {
  FakeDevice device;
  device.capacity = 1 << 20;
  auto allocator = DeviceAllocator::Create(device.Backend());
  absl::StatusOr<CUdeviceptr> ptr = allocator->Allocate(5 << 20);
  ASSERT_FALSE(ptr.ok());
  EXPECT_EQ(ptr.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(ptr.status().message(), HasSubstr("cannot allocate 5242880 bytes of device memory"));
  EXPECT_THAT(ptr.status().message(), HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ(allocator->stats().allocations, 0);
}

TEST(JitAllocator, StorageReturnsItsBlockToThePool) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  absl::StatusOr<std::shared_ptr<Storage>> storage = allocator->AllocateStorage(Device::Cuda(1), 100);
  ASSERT_TRUE(storage.ok());
  EXPECT_EQ((*storage)->device(), Device::Cuda(1));
  EXPECT_EQ((*storage)->bytes(), 100u);
  EXPECT_TRUE((*storage)->writable());
  void* const address = (*storage)->data();
  storage->reset();
  EXPECT_EQ(allocator->stats().bytes_cached, 512);
  absl::StatusOr<std::shared_ptr<Storage>> again = allocator->AllocateStorage(Device::Cuda(1), 200);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data(), address);
  EXPECT_EQ(allocator->stats().cache_hits, 1);
}

TEST(JitAllocator, StorageKeepsTheAllocatorAlive) {
  FakeDevice device;
  auto allocator = DeviceAllocator::Create(device.Backend());
  std::shared_ptr<Storage> storage = *allocator->AllocateStorage(Device::Cuda(0), 4096);
  allocator.reset();
  EXPECT_EQ(device.frees, 0);
  storage.reset();  // back to the pool, then the last owner frees the pool
  EXPECT_EQ(device.frees, 1);
  EXPECT_TRUE(device.live.empty());
}

TEST(JitAllocator, ConcurrentUseKeepsStatsConsistent) {
  FakeDevice device;
  absl::Mutex device_mu;
  DeviceMemoryBackend inner = device.Backend();
  DeviceMemoryBackend locked;
  locked.allocate = [&](size_t bytes) {
    absl::MutexLock lock(&device_mu);
    return inner.allocate(bytes);
  };
  locked.free = [&](CUdeviceptr ptr) {
    absl::MutexLock lock(&device_mu);
    return inner.free(ptr);
  };
  auto allocator = DeviceAllocator::Create(locked);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&allocator, t] {
      for (int i = 0; i < 500; ++i) {
        std::vector<CUdeviceptr> held;
        for (int k = 0; k < 4; ++k) held.push_back(*allocator->Allocate(512u << ((t + i + k) % 6)));
        absl::flat_hash_set<CUdeviceptr> distinct(held.begin(), held.end());
        if (distinct.size() != held.size()) std::abort();  // a block handed out twice
        for (CUdeviceptr ptr : held) allocator->Free(ptr);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.allocations, 8 * 500 * 4);
  EXPECT_EQ(stats.allocations, stats.cache_hits + stats.backend_allocations);
  EXPECT_EQ(static_cast<size_t>(stats.backend_allocations), device.live.size());
}

}  // namespace
}  // namespace kiln::jit
