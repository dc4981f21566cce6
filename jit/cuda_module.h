// A loaded CUBIN and the kernels in it.
#ifndef KILN_JIT_CUDA_MODULE_H_
#define KILN_JIT_CUDA_MODULE_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_types.h"
#include "jit/primary_context.h"

namespace kiln::jit {

struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned dynamic_shared_bytes = 0;
  // Every block resident at once (cuLaunchCooperativeKernel), so that blocks
  // may wait for one another; the grid must fit (CudaContext::ResidentBlocks).
  bool cooperative = false;
  // Programmatic dependent launch (sm_90 and later; ignored before): the
  // kernel's blocks may be scheduled while the kernel before it in the
  // stream finishes, hiding the gap between them. The kernel must wait
  // (griddepcontrol.wait: kiln's wait_for_prior_grid) before it reads or
  // writes memory that kernel touches; every kernel kiln generates does so
  // first thing.
  bool early = false;
  // Blocks of a thread block cluster (sm_90 and later): they run at once,
  // on one GPC, and read one another's shared memory. 1 x 1 x 1: none.
  Dim3 cluster;
};

// One kernel of a module, valid as long as the module. Launched with
// CudaContext::Launch.
class CudaFunction {
 public:
  CudaFunction(const CudaFunction&) = delete;
  CudaFunction& operator=(const CudaFunction&) = delete;

  const std::string& name() const { return name_; }
  CUfunction handle() const { return handle_; }
  int static_shared_bytes() const { return static_shared_bytes_; }
  int num_registers() const { return num_registers_; }
  // The most threads per block this kernel can launch with (registers bound it).
  int max_threads_per_block() const { return max_threads_per_block_; }
  // The dynamic shared memory the kernel may use now (the
  // MAX_DYNAMIC_SHARED_SIZE_BYTES attribute, raised on demand).
  int dynamic_shared_limit() const { return dynamic_shared_limit_.load(std::memory_order_relaxed); }

 private:
  friend class CudaModule;
  friend class CudaContext;
  CudaFunction(std::string name, CUfunction handle) : name_(std::move(name)), handle_(handle) {}

  std::string name_;
  CUfunction handle_;
  int static_shared_bytes_ = 0;
  int num_registers_ = 0;
  int max_threads_per_block_ = 0;
  std::atomic<int> dynamic_shared_limit_{0};
};

class CudaModule {
 public:
  // cuModuleLoadData in `context`. InvalidArgument when the image is empty or
  // not for this device.
  static absl::StatusOr<std::unique_ptr<CudaModule>> Load(std::shared_ptr<PrimaryContext> context,
                                                          absl::string_view cubin);
  ~CudaModule();  // cuModuleUnload
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // The kernel named `name` (its extern "C" name, or the mangled one),
  // looked up once and kept. NotFound naming the kernel otherwise.
  absl::StatusOr<CudaFunction*> GetFunction(absl::string_view name);

  CUmodule handle() const { return module_; }

 private:
  CudaModule(std::shared_ptr<PrimaryContext> context, CUmodule module)
      : context_(std::move(context)), module_(module) {}

  std::shared_ptr<PrimaryContext> context_;
  CUmodule module_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<CudaFunction>> functions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::jit

#endif  // KILN_JIT_CUDA_MODULE_H_
