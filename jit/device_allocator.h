// A caching allocator for device memory. cuMemAlloc/cuMemFree cost tens of
// microseconds and cuMemFree synchronizes the device, so freed blocks are kept
// in per-size-class pools and handed out again. All work runs on one stream
// (CudaContext), so a block freed while a queued kernel still reads it is only
// written by work queued after that kernel: reuse is stream-ordered and safe.
#ifndef KILN_JIT_DEVICE_ALLOCATOR_H_
#define KILN_JIT_DEVICE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_types.h"
#include "tensor/device.h"
#include "tensor/storage.h"

namespace kiln::jit {

// Where blocks really come from: cuMemAlloc/cuMemFree in a CudaContext, a
// fake in tests. `allocate` returns ResourceExhausted when memory is short.
struct DeviceMemoryBackend {
  std::function<absl::StatusOr<CUdeviceptr>(size_t bytes)> allocate;
  std::function<absl::Status(CUdeviceptr ptr)> free;
};

struct AllocatorStats {
  int64_t bytes_in_use = 0;        // size classes of the blocks handed out
  int64_t bytes_cached = 0;        // size classes of the blocks kept for reuse
  int64_t peak_bytes_reserved = 0; // max of in use + cached
  int64_t allocations = 0;         // Allocate calls that succeeded
  int64_t cache_hits = 0;          // ... served from the pool
  int64_t backend_allocations = 0; // ... that called the backend
  int64_t backend_frees = 0;
  int64_t cache_flushes = 0;       // pools emptied to retry an allocation that ran out
};

class DeviceAllocator : public std::enable_shared_from_this<DeviceAllocator> {
 public:
  static std::shared_ptr<DeviceAllocator> Create(DeviceMemoryBackend backend);
  // Frees the cached blocks. Blocks still handed out are the owner's bug; the
  // Storage deleters keep the allocator alive, so only raw Allocate callers
  // can get here with blocks outstanding.
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // The block size a request is served with: at least 512 bytes, rounded up
  // to a power of two below 1 MiB and to a multiple of 1 MiB from there (so a
  // pool holds one size, and large blocks waste less than 1 MiB).
  // ResourceExhausted when the rounding would overflow.
  static absl::StatusOr<size_t> SizeClass(size_t bytes);

  // A block of at least `bytes` (0 gives the smallest class). Takes a pooled
  // block of the same class when there is one; when the backend runs out of
  // memory, frees the pools and tries once more.
  absl::StatusOr<CUdeviceptr> Allocate(size_t bytes);
  // Returns a block from Allocate to its pool. Never calls the backend, so it
  // cannot fail (Storage deleters call it).
  void Free(CUdeviceptr ptr);

  // Allocate, wrapped in a Storage of `device` whose deleter calls Free.
  // The storage keeps this allocator alive.
  absl::StatusOr<std::shared_ptr<Storage>> AllocateStorage(Device device, size_t bytes);

  // Frees every pooled block through the backend; the first error, if any.
  absl::Status ReleaseCache();

  AllocatorStats stats() const;

 private:
  explicit DeviceAllocator(DeviceMemoryBackend backend) : backend_(std::move(backend)) {}
  absl::Status ReleaseCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteReserved() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DeviceMemoryBackend backend_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<size_t, std::vector<CUdeviceptr>> pools_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<CUdeviceptr, size_t> in_use_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::jit

#endif  // KILN_JIT_DEVICE_ALLOCATOR_H_
