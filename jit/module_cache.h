// Loaded modules by kernel cache key, so a CUBIN is loaded into a context
// once however many times it is asked for.
#ifndef KILN_JIT_MODULE_CACHE_H_
#define KILN_JIT_MODULE_CACHE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_context.h"
#include "jit/kernel_cache.h"
#include "tensor/stable_hash.h"

namespace kiln::jit {

class ModuleCache {
 public:
  // `context` must outlive the cache.
  explicit ModuleCache(CudaContext& context) : context_(context) {}

  // The module for `kernel.key`, loaded from `kernel.cubin` the first time.
  // The pointer stays valid as long as the cache.
  absl::StatusOr<CudaModule*> GetOrLoad(const CachedKernel& kernel);

  size_t size() const;

 private:
  CudaContext& context_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Hash128, std::unique_ptr<CudaModule>> modules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::jit

#endif  // KILN_JIT_MODULE_CACHE_H_
