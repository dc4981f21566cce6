#include "jit/device_allocator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "jit/cuda_status.h"
#include "tensor/check.h"

namespace kiln::jit {
namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kLargeGranularity = size_t{1} << 20;

}  // namespace

std::shared_ptr<DeviceAllocator> DeviceAllocator::Create(DeviceMemoryBackend backend) {
  return std::shared_ptr<DeviceAllocator>(new DeviceAllocator(std::move(backend)));
}

DeviceAllocator::~DeviceAllocator() {
  absl::MutexLock lock(&mu_);
  ReleaseCacheLocked().IgnoreError();  // nobody is left to report it to
}

absl::StatusOr<size_t> DeviceAllocator::SizeClass(size_t bytes) {
  if (bytes > SIZE_MAX - kLargeGranularity) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of device memory: too large"));
  }
  if (bytes >= kLargeGranularity) {
    return (bytes + kLargeGranularity - 1) / kLargeGranularity * kLargeGranularity;
  }
  size_t size = kMinBlock;
  while (size < bytes) size *= 2;
  return size;
}

void DeviceAllocator::NoteReserved() {
  stats_.peak_bytes_reserved =
      std::max(stats_.peak_bytes_reserved, stats_.bytes_in_use + stats_.bytes_cached);
}

absl::StatusOr<CUdeviceptr> DeviceAllocator::Allocate(size_t bytes) {
  KILN_JIT_ASSIGN_OR_RETURN(const size_t size, SizeClass(bytes));
  // One lock around the backend call too: allocations are rare once the
  // pools are warm, and the out-of-memory retry must see a consistent pool.
  absl::MutexLock lock(&mu_);
  if (auto pool = pools_.find(size); pool != pools_.end() && !pool->second.empty()) {
    const CUdeviceptr ptr = pool->second.back();
    pool->second.pop_back();
    in_use_.emplace(ptr, size);
    stats_.bytes_cached -= static_cast<int64_t>(size);
    stats_.bytes_in_use += static_cast<int64_t>(size);
    ++stats_.allocations;
    ++stats_.cache_hits;
    return ptr;
  }
  absl::StatusOr<CUdeviceptr> ptr = backend_.allocate(size);
  if (!ptr.ok() && ptr.status().code() == absl::StatusCode::kResourceExhausted &&
      stats_.bytes_cached > 0) {
    // Blocks of other sizes may be what stands in the way.
    ++stats_.cache_flushes;
    KILN_JIT_RETURN_IF_ERROR(ReleaseCacheLocked());
    ptr = backend_.allocate(size);
  }
  if (!ptr.ok()) {
    return Annotate(ptr.status(),
                    absl::StrCat("cannot allocate ", bytes, " bytes of device memory (",
                                 stats_.bytes_in_use, " bytes in use by kiln)"));
  }
  KILN_CHECK(in_use_.emplace(*ptr, size).second,
             "the device memory backend returned a block that is still in use");
  stats_.bytes_in_use += static_cast<int64_t>(size);
  ++stats_.allocations;
  ++stats_.backend_allocations;
  NoteReserved();
  return *ptr;
}

void DeviceAllocator::Free(CUdeviceptr ptr) {
  absl::MutexLock lock(&mu_);
  auto it = in_use_.find(ptr);
  KILN_CHECK(it != in_use_.end(), "DeviceAllocator::Free of a block it did not hand out");
  const size_t size = it->second;
  in_use_.erase(it);
  pools_[size].push_back(ptr);
  stats_.bytes_in_use -= static_cast<int64_t>(size);
  stats_.bytes_cached += static_cast<int64_t>(size);
}

absl::StatusOr<std::shared_ptr<Storage>> DeviceAllocator::AllocateStorage(Device device,
                                                                          size_t bytes) {
  KILN_JIT_ASSIGN_OR_RETURN(const CUdeviceptr ptr, Allocate(bytes));
  return std::make_shared<Storage>(
      device, reinterpret_cast<void*>(ptr), bytes, /*writable=*/true,
      [self = shared_from_this()](void* p) { self->Free(reinterpret_cast<CUdeviceptr>(p)); });
}

absl::Status DeviceAllocator::ReleaseCache() {
  absl::MutexLock lock(&mu_);
  return ReleaseCacheLocked();
}

absl::Status DeviceAllocator::ReleaseCacheLocked() {
  absl::Status first_error;
  for (auto& [size, pool] : pools_) {
    for (const CUdeviceptr ptr : pool) {
      absl::Status status = backend_.free(ptr);
      if (!status.ok() && first_error.ok()) first_error = status;
      ++stats_.backend_frees;
      stats_.bytes_cached -= static_cast<int64_t>(size);
    }
  }
  pools_.clear();
  return first_error;
}

AllocatorStats DeviceAllocator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace kiln::jit
