#include "jit/module_cache.h"

#include "jit/cuda_status.h"

namespace kiln::jit {

absl::StatusOr<CudaModule*> ModuleCache::GetOrLoad(const CachedKernel& kernel) {
  // Held while loading: a load takes well under a millisecond, and two
  // loads of one module would waste device memory.
  absl::MutexLock lock(&mu_);
  if (auto it = modules_.find(kernel.key); it != modules_.end()) return it->second.get();
  KILN_JIT_ASSIGN_OR_RETURN(std::unique_ptr<CudaModule> module,
                            context_.LoadModule(*kernel.cubin));
  CudaModule* out = module.get();
  modules_.emplace(kernel.key, std::move(module));
  return out;
}

size_t ModuleCache::size() const {
  absl::MutexLock lock(&mu_);
  return modules_.size();
}

}  // namespace kiln::jit
