#include "jit/compile_pool.h"

#include <algorithm>
#include <utility>

namespace kiln::jit {

CompilePool::CompilePool(KernelCache& cache, int threads)
    : cache_(cache),
      threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

CompilePool::~CompilePool() { Stop(); }

void CompilePool::Stop() {
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (Task& task : tasks_) Finish(*task.batch);
    tasks_.clear();
    workers.swap(workers_);
  }
  for (std::thread& worker : workers) worker.join();
}

std::shared_future<void> CompilePool::Submit(std::vector<std::string> sources, const CompileOptions& options) {
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  auto batch = std::make_shared<Batch>(sources.size());
  std::shared_future<void> done = batch->done.get_future().share();
  absl::MutexLock lock(&mu_);
  if (sources.empty() || stopping_) {
    batch->done.set_value();
    return done;
  }
  for (std::string& source : sources) tasks_.push_back({std::move(source), options, batch});
  // Workers start as the queue first needs them, up to threads_.
  while (static_cast<int>(workers_.size()) < threads_ && workers_.size() < tasks_.size()) {
    workers_.emplace_back([this] { Work(); });
  }
  return done;
}

void CompilePool::Work() {
  for (;;) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &CompilePool::HasWorkOrStops));
      if (tasks_.empty()) return;  // stopping
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    (void)cache_.GetOrCompile(task.source, task.options);
    absl::MutexLock lock(&mu_);
    Finish(*task.batch);
  }
}

bool CompilePool::HasWorkOrStops() const { return stopping_ || !tasks_.empty(); }

void CompilePool::Finish(Batch& batch) {
  if (--batch.left == 0) batch.done.set_value();
}

}  // namespace kiln::jit
