#include "jit/cuda_context.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_status.h"

namespace kiln::jit {
namespace {

// cuMemAlloc/cuMemFree in `primary`. cuMemFree waits for the device, which
// is what makes freeing a block that queued work may still use safe.
DeviceMemoryBackend CudaMemoryBackend(std::shared_ptr<PrimaryContext> primary) {
  DeviceMemoryBackend backend;
  backend.allocate = [primary](size_t bytes) -> absl::StatusOr<CUdeviceptr> {
    KILN_JIT_RETURN_IF_ERROR(primary->MakeCurrent());
    CUdeviceptr ptr = 0;
    KILN_JIT_RETURN_IF_ERROR(KILN_CU(primary->driver(), cuMemAlloc(&ptr, bytes)));
    return ptr;
  };
  backend.free = [primary](CUdeviceptr ptr) -> absl::Status {
    KILN_JIT_RETURN_IF_ERROR(primary->MakeCurrent());
    return KILN_CU(primary->driver(), cuMemFree(ptr));
  };
  return backend;
}

// Blocks in a cluster of `cluster`'s dims (1: not a cluster).
uint64_t ClusterBlocks(const Dim3& cluster) { return uint64_t{cluster.x} * cluster.y * cluster.z; }

// cuLaunchKernelEx's attribute for clusters of `cluster`'s dims.
CUlaunchAttribute ClusterAttribute(const Dim3& cluster) {
  CUlaunchAttribute attr;
  attr.id = kLaunchAttrClusterDimension;
  attr.value.dims[0] = cluster.x;
  attr.value.dims[1] = cluster.y;
  attr.value.dims[2] = cluster.z;
  return attr;
}

std::string LaunchText(const CudaFunction& function, const LaunchConfig& c) {
  return absl::StrCat(c.cooperative ? "cooperative " : "", c.early ? "early " : "", "launch of kernel '",
                      function.name(), "' (grid ",
                      c.grid.x, "x", c.grid.y, "x", c.grid.z, ", block ", c.block.x, "x", c.block.y, "x", c.block.z,
                      ", ", c.dynamic_shared_bytes, " bytes of dynamic shared memory",
                      ClusterBlocks(c.cluster) > 1
                          ? absl::StrCat(", clusters of ", c.cluster.x, "x", c.cluster.y, "x", c.cluster.z)
                          : "",
                      ")");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(
    int ordinal, const LibraryOptions& libraries) {
  KILN_JIT_ASSIGN_OR_RETURN(const DriverApi* driver, LoadDriver(libraries));
  KILN_JIT_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(*driver, ordinal));
  KILN_JIT_ASSIGN_OR_RETURN(std::shared_ptr<PrimaryContext> primary,
                            PrimaryContext::Retain(*driver, ordinal));
  KILN_JIT_RETURN_IF_ERROR(primary->MakeCurrent());
  CUstream stream = nullptr;
  // Non-blocking: kiln's work must not serialize with other libraries'
  // work on the legacy default stream.
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(*driver, cuStreamCreate(&stream, kStreamNonBlocking)));
  std::shared_ptr<DeviceAllocator> allocator = DeviceAllocator::Create(CudaMemoryBackend(primary));
  return std::unique_ptr<CudaContext>(
      new CudaContext(std::move(primary), std::move(info), stream, std::move(allocator)));
}

absl::StatusOr<CudaContext*> CudaContext::Shared(int ordinal, const LibraryOptions& libraries) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* contexts = new absl::flat_hash_map<int, absl::StatusOr<CudaContext*>>();
  absl::MutexLock lock(&mu);
  auto it = contexts->find(ordinal);
  if (it == contexts->end()) {
    absl::StatusOr<std::unique_ptr<CudaContext>> created = Create(ordinal, libraries);
    absl::StatusOr<CudaContext*> entry =
        created.ok() ? absl::StatusOr<CudaContext*>(created->release()) : created.status();
    it = contexts->emplace(ordinal, std::move(entry)).first;
  }
  return it->second;
}

CudaContext::~CudaContext() {
  if (!MakeCurrent().ok()) return;
  KILN_CU(driver(), cuStreamSynchronize(stream_)).IgnoreError();
  KILN_CU(driver(), cuStreamDestroy(stream_)).IgnoreError();
}

absl::StatusOr<std::shared_ptr<Storage>> CudaContext::Allocate(size_t bytes) {
  return allocator_->AllocateStorage(device(), bytes);
}

absl::Status CudaContext::CopyHostToDevice(CUdeviceptr dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  return KILN_CU(driver(), cuMemcpyHtoDAsync(dst, src, bytes, stream_));
}

absl::Status CudaContext::CopyDeviceToHost(void* dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver(), cuMemcpyDtoHAsync(dst, src, bytes, stream_)));
  return KILN_CU(driver(), cuStreamSynchronize(stream_));
}

absl::Status CudaContext::CopyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  return KILN_CU(driver(), cuMemcpyDtoDAsync(dst, src, bytes, stream_));
}

absl::Status CudaContext::Memset(CUdeviceptr dst, uint8_t value, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  return KILN_CU(driver(), cuMemsetD8Async(dst, value, bytes, stream_));
}

absl::Status CudaContext::Synchronize() {
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  return KILN_CU(driver(), cuStreamSynchronize(stream_));
}

absl::StatusOr<std::unique_ptr<CudaModule>> CudaContext::LoadModule(absl::string_view cubin) {
  return CudaModule::Load(primary_, cubin);
}

absl::Status CudaContext::AllowDynamicSharedMemory(CudaFunction& function, unsigned bytes) {
  if (static_cast<int64_t>(bytes) <= function.dynamic_shared_limit()) return absl::OkStatus();
  const int64_t available =
      int64_t{info_.shared_memory_per_block_optin} - function.static_shared_bytes();
  if (static_cast<int64_t>(bytes) > available) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", function.name(), "' asks for ", bytes,
        " bytes of dynamic shared memory, but ", info_.name, " (cuda:", info_.ordinal,
        ") allows at most ", available, " per block (its opt-in limit of ",
        info_.shared_memory_per_block_optin, " bytes less the kernel's ",
        function.static_shared_bytes(), " bytes of static shared memory)"));
  }
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  KILN_JIT_RETURN_IF_ERROR(Annotate(
      KILN_CU(driver(), cuFuncSetAttribute(function.handle(), kFuncAttrMaxDynamicSharedSizeBytes,
                                           static_cast<int>(bytes))),
      absl::StrCat("kernel '", function.name(), "'")));
  // Only ever raised: a racing smaller request must not undo a larger one.
  int current = function.dynamic_shared_limit_.load(std::memory_order_relaxed);
  while (current < static_cast<int>(bytes) &&
         !function.dynamic_shared_limit_.compare_exchange_weak(current, static_cast<int>(bytes))) {
  }
  return absl::OkStatus();
}

absl::Status CudaContext::CheckLaunch(CudaFunction& function, const LaunchConfig& config) {
  const Dim3& g = config.grid;
  const Dim3& b = config.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(LaunchText(function, config), ": grid and block sizes must be positive"));
  }
  const uint64_t threads = uint64_t{b.x} * b.y * b.z;
  const int max_threads = std::min(info_.max_threads_per_block, function.max_threads_per_block());
  if (threads > static_cast<uint64_t>(max_threads)) {
    return absl::InvalidArgumentError(
        absl::StrCat(LaunchText(function, config), ": ", threads,
                     " threads per block, but the kernel can run at most ", max_threads));
  }
  if (static_cast<int64_t>(config.dynamic_shared_bytes) > function.dynamic_shared_limit()) {
    KILN_JIT_RETURN_IF_ERROR(AllowDynamicSharedMemory(function, config.dynamic_shared_bytes));
  }
  const Dim3& c = config.cluster;
  const bool clustered = ClusterBlocks(c) > 1;
  if (clustered && (info_.compute_major < 9 || c.x == 0 || c.y == 0 || c.z == 0 || g.x % c.x != 0 ||
                    g.y % c.y != 0 || g.z % c.z != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        LaunchText(function, config), ": clusters of ", c.x, "x", c.y, "x", c.z, " blocks need sm_90 or later (",
        info_.name, " is ", info_.arch(), ") and a grid they divide"));
  }
  return absl::OkStatus();
}

absl::Status CudaContext::Launch(CudaFunction& function, const LaunchConfig& config,
                                 void** args) {
  KILN_JIT_RETURN_IF_ERROR(CheckLaunch(function, config));
  const Dim3& g = config.grid;
  const Dim3& b = config.block;
  const Dim3& c = config.cluster;
  const bool clustered = ClusterBlocks(c) > 1;
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  absl::Status status;
  if ((config.early || clustered) && info_.compute_major >= 9) {
    CUlaunchAttribute attrs[3];
    unsigned count = 0;
    if (config.early) {
      attrs[count].id = kLaunchAttrProgrammaticStreamSerialization;
      attrs[count++].value.value = 1;
    }
    if (config.cooperative) {
      attrs[count].id = kLaunchAttrCooperative;
      attrs[count++].value.value = 1;
    }
    if (clustered) attrs[count++] = ClusterAttribute(c);
    const CUlaunchConfig launch{g.x, g.y, g.z, b.x, b.y, b.z, config.dynamic_shared_bytes, stream_, attrs, count};
    status = KILN_CU(driver(), cuLaunchKernelEx(&launch, function.handle(), args, nullptr));
  } else if (config.cooperative) {
    status = KILN_CU(driver(), cuLaunchCooperativeKernel(function.handle(), g.x, g.y, g.z, b.x, b.y, b.z,
                                                         config.dynamic_shared_bytes, stream_, args));
  } else {
    status = KILN_CU(driver(), cuLaunchKernel(function.handle(), g.x, g.y, g.z, b.x, b.y, b.z,
                                              config.dynamic_shared_bytes, stream_, args, nullptr));
  }
  if (!status.ok()) [[unlikely]] return Annotate(status, LaunchText(function, config));
  return status;
}

absl::StatusOr<int64_t> CudaContext::ResidentBlocks(CudaFunction& function, int threads,
                                                    unsigned dynamic_shared_bytes, Dim3 cluster) {
  KILN_JIT_RETURN_IF_ERROR(AllowDynamicSharedMemory(function, dynamic_shared_bytes));
  KILN_JIT_RETURN_IF_ERROR(MakeCurrent());
  const uint64_t cluster_blocks = ClusterBlocks(cluster);
  if (cluster_blocks > 1) {
    if (info_.compute_major < 9) return 0;
    // A cluster's blocks share a GPC: fewer may fit than the SMs' count.
    CUlaunchAttribute attr = ClusterAttribute(cluster);
    const CUlaunchConfig launch{cluster.x, cluster.y, cluster.z, static_cast<unsigned>(threads), 1, 1,
                                dynamic_shared_bytes, stream_, &attr, 1};
    int clusters = 0;
    KILN_JIT_RETURN_IF_ERROR(
        KILN_CU(driver(), cuOccupancyMaxActiveClusters(&clusters, function.handle(), &launch)));
    return static_cast<int64_t>(clusters) * static_cast<int64_t>(cluster_blocks);
  }
  int per_sm = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver(), cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                                 &per_sm, function.handle(), threads, dynamic_shared_bytes)));
  return int64_t{per_sm} * info_.sm_count;
}

absl::StatusOr<CudaEvent> CudaContext::CreateEvent() const {
  return CudaEvent::Create(primary_, stream_);
}

bool CudaContext::CanUpdateGraphs() const {
  return driver().cuStreamGetCaptureInfo != nullptr && driver().cuGraphExecKernelNodeSetParams != nullptr;
}

absl::StatusOr<CUgraphNode> CudaContext::CapturedNode() const {
  if (!CanUpdateGraphs()) {
    return absl::FailedPreconditionError(absl::StrCat("the CUDA driver (", driver().library,
                                                      ") lacks cuStreamGetCaptureInfo_v3 (CUDA 12.3)"));
  }
  int status = 0;
  uint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* nodes = nullptr;
  const void* edges = nullptr;
  size_t count = 0;
  KILN_JIT_RETURN_IF_ERROR(
      KILN_CU(driver(), cuStreamGetCaptureInfo(stream_, &status, &id, &graph, &nodes, &edges, &count)));
  if (status != kStreamCaptureStatusActive || count != 1) {
    return absl::InternalError(absl::StrCat("CapturedNode: the stream is ",
                                            status == kStreamCaptureStatusActive ? "" : "not ",
                                            "capturing, with ", count, " nodes last queued (want 1)"));
  }
  return nodes[0];
}

absl::StatusOr<CudaGraph> CudaContext::CaptureGraph(const std::function<absl::Status()>& enqueue) const {
  return CudaGraph::Capture(primary_, stream_, enqueue);
}

}  // namespace kiln::jit
