// Worker threads that compile kernel sources into a KernelCache, so that a
// caller may start compiles and then wait for them, or stop waiting: the
// superoptimizer times each candidate as soon as its kernels are compiled,
// and at its budget's end leaves the slowest compiles to finish here (their
// CUBINs still reach the cache).
#ifndef KILN_JIT_COMPILE_POOL_H_
#define KILN_JIT_COMPILE_POOL_H_

#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "jit/kernel_cache.h"
#include "jit/nvrtc_compiler.h"

namespace kiln::jit {

class CompilePool {
 public:
  // `threads` workers (0: one a core), started by the first Submit. Each
  // NVRTC program compiles independently of the others.
  explicit CompilePool(KernelCache& cache, int threads = 0);
  // Stop()s.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Compiles each distinct source of `sources` into the cache; the future
  // is ready once all are done. A compile error is not reported here: the
  // cache's GetOrCompile reports it when the kernel is asked for.
  std::shared_future<void> Submit(std::vector<std::string> sources, const CompileOptions& options);

  // Finishes the compiles under way and drops those not begun (their
  // submissions' futures become ready all the same); later submissions
  // compile nothing. A process calls it before it exits, so that no NVRTC
  // compile runs while the libraries' static objects are destroyed.
  void Stop();

 private:
  // One Submit's compiles: ready when the last is done.
  struct Batch {
    explicit Batch(size_t n) : left(n) {}
    std::promise<void> done;
    size_t left;  // guarded by the pool's mu_
  };
  struct Task {
    std::string source;
    CompileOptions options;
    std::shared_ptr<Batch> batch;
  };
  void Work();
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a task of `batch` done; mu_ held.
  void Finish(Batch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  KernelCache& cache_;
  const int threads_;
  mutable absl::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::jit

#endif  // KILN_JIT_COMPILE_POOL_H_
