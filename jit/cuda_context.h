// One CUDA device as kiln uses it: the device's primary context, one stream
// (created once, non-blocking) on which all of kiln's copies and launches
// are queued in order, and a caching allocator for its memory.
#ifndef KILN_JIT_CUDA_CONTEXT_H_
#define KILN_JIT_CUDA_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jit/cuda_event.h"
#include "jit/cuda_graph.h"
#include "jit/cuda_module.h"
#include "jit/cuda_types.h"
#include "jit/device_allocator.h"
#include "jit/device_info.h"
#include "jit/driver_api.h"
#include "jit/options.h"
#include "jit/primary_context.h"
#include "tensor/device.h"
#include "tensor/storage.h"

namespace kiln::jit {

class CudaContext {
 public:
  // Loads the driver (Unavailable without one or without a GPU), checks the
  // ordinal, retains the primary context and creates the stream.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(int ordinal,
                                                             const LibraryOptions& libraries = {});
  // The process-wide context of device `ordinal`, created by the first call
  // (with that call's `libraries`) and never destroyed: tearing down a
  // context from a static destructor races the driver's own exit handlers.
  static absl::StatusOr<CudaContext*> Shared(int ordinal, const LibraryOptions& libraries = {});

  // Waits for queued work, then destroys the stream. Storages and modules
  // keep the primary context (and the allocator) alive on their own.
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  const DriverApi& driver() const { return primary_->driver(); }
  const DeviceInfo& info() const { return info_; }
  Device device() const { return Device::Cuda(info_.ordinal); }
  CUstream stream() const { return stream_; }
  const std::shared_ptr<PrimaryContext>& primary() const { return primary_; }
  absl::Status MakeCurrent() const { return primary_->MakeCurrent(); }

  // ---- memory
  DeviceAllocator& allocator() const { return *allocator_; }
  // `bytes` of device memory as a Storage on Device::Cuda(ordinal), returned
  // to the allocator's pool when the last reference goes.
  absl::StatusOr<std::shared_ptr<Storage>> Allocate(size_t bytes);

  // Queued on the stream. `src` may be freed as soon as this returns (the
  // driver stages pageable memory before returning).
  absl::Status CopyHostToDevice(CUdeviceptr dst, const void* src, size_t bytes);
  // Queued on the stream, then waits for it: `dst` holds the data on return.
  absl::Status CopyDeviceToHost(void* dst, CUdeviceptr src, size_t bytes);
  absl::Status CopyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  // Sets `bytes` bytes at `dst` to `value`, queued on the stream.
  absl::Status Memset(CUdeviceptr dst, uint8_t value, size_t bytes);
  // Waits for everything queued on the stream; reports a kernel's fault.
  absl::Status Synchronize();

  // ---- kernels
  absl::StatusOr<std::unique_ptr<CudaModule>> LoadModule(absl::string_view cubin);
  // Lets `function` use `bytes` of dynamic shared memory (beyond 48 KiB needs
  // the opt-in attribute). InvalidArgument naming the kernel and the device's
  // limit when the block would exceed it. Launch calls this when needed; the
  // executor may call it once at load time instead.
  absl::Status AllowDynamicSharedMemory(CudaFunction& function, unsigned bytes);
  // Queues `function` on the stream. `args` holds one pointer per kernel
  // parameter, pointing at its value (cuLaunchKernel's kernelParams).
  absl::Status Launch(CudaFunction& function, const LaunchConfig& config, void** args);
  // What Launch checks before it queues: sizes positive, threads and dynamic
  // shared memory within the kernel's limits (raising the opt-in attribute
  // where needed), clusters dividing the grid. Graph replay checks a launch
  // it updates a node to with this.
  absl::Status CheckLaunch(CudaFunction& function, const LaunchConfig& config);
  // How many blocks of `threads` threads and `dynamic_shared_bytes` of
  // dynamic shared memory can be resident on the device at once: the most
  // a cooperative launch may ask for. In clusters of `cluster` blocks
  // (their blocks on one GPC), as many as whole clusters hold; none before
  // sm_90.
  absl::StatusOr<int64_t> ResidentBlocks(CudaFunction& function, int threads, unsigned dynamic_shared_bytes,
                                         Dim3 cluster = {});

  // ---- timing
  absl::StatusOr<CudaEvent> CreateEvent() const;
  // What `enqueue` queues on the stream, captured as a graph to replay
  // (CudaGraph::Capture).
  absl::StatusOr<CudaGraph> CaptureGraph(const std::function<absl::Status()>& enqueue) const;
  // Whether the driver can update a replayed graph's kernels (CUDA 12.3+:
  // CapturedNode and CudaGraph::SetKernelNode).
  bool CanUpdateGraphs() const;
  // While capturing: the node the last launch on the stream became.
  absl::StatusOr<CUgraphNode> CapturedNode() const;

 private:
  CudaContext(std::shared_ptr<PrimaryContext> primary, DeviceInfo info, CUstream stream,
              std::shared_ptr<DeviceAllocator> allocator)
      : primary_(std::move(primary)), info_(std::move(info)), stream_(stream),
        allocator_(std::move(allocator)) {}

  std::shared_ptr<PrimaryContext> primary_;
  DeviceInfo info_;
  CUstream stream_;
  std::shared_ptr<DeviceAllocator> allocator_;
};

// The device address a device Storage holds.
inline CUdeviceptr DevicePointer(const Storage& storage) {
  return reinterpret_cast<CUdeviceptr>(storage.data());
}

}  // namespace kiln::jit

#endif  // KILN_JIT_CUDA_CONTEXT_H_
