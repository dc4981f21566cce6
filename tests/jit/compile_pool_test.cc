// The compile pool with a fake compiler: compiles run on its threads into
// the kernel cache, each distinct source once a submission, a submission's
// future is ready when its compiles are done, and compiles not waited for
// still reach the cache; a pool stopping drops what it has not begun.
#include "jit/compile_pool.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "jit/kernel_cache.h"

namespace kiln::jit {
namespace {

constexpr ToolchainVersions kVersions{13, 0, 13000};

CacheOptions MemoryOnly() {
  CacheOptions options;
  options.disk = false;
  return options;
}

// A compiler whose compiles of "slow" sources wait for `release`.
struct GatedCompiler {
  std::atomic<int> calls{0};
  absl::Notification release;
  KernelCache::CompileFn Fn() {
    return [this](absl::string_view source, const CompileOptions&) -> absl::StatusOr<std::string> {
      ++calls;
      if (source.substr(0, 4) == "slow") release.WaitForNotification();
      if (source == "bad") return absl::InvalidArgumentError("syntax error");
      return absl::StrCat("CUBIN[", source, "]");
    };
  }
};

bool Ready(const std::shared_future<void>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TEST(CompilePool, ASubmissionIsReadyWhenItsCompilesAreDoneAndTheCacheHasThem) {
  GatedCompiler compiler;
  KernelCache cache(MemoryOnly(), kVersions, compiler.Fn());
  CompilePool pool(cache, 4);
  std::shared_future<void> done = pool.Submit({"a", "b", "a", "bad"}, CompileOptions{});
  done.wait();
  EXPECT_EQ(compiler.calls, 3) << "each distinct source once";
  EXPECT_EQ(cache.stats().compiles, 3);
  ASSERT_TRUE(cache.GetOrCompile("a", CompileOptions{}).ok());
  EXPECT_EQ(cache.stats().memory_hits, 1);
  EXPECT_FALSE(cache.GetOrCompile("bad", CompileOptions{}).ok()) << "a compile error is reported when asked for";
  EXPECT_TRUE(Ready(pool.Submit({}, CompileOptions{}))) << "nothing to compile";
}

// A slow compile holds up only its own submission: another, submitted
// after it, is ready first; the slow one's CUBIN still reaches the cache.
TEST(CompilePool, ASlowCompileHoldsUpOnlyItsOwnSubmission) {
  GatedCompiler compiler;
  KernelCache cache(MemoryOnly(), kVersions, compiler.Fn());
  CompilePool pool(cache, 2);
  std::shared_future<void> slow = pool.Submit({"slow kernel"}, CompileOptions{});
  std::shared_future<void> fast = pool.Submit({"fast kernel", "other kernel"}, CompileOptions{});
  fast.wait();
  EXPECT_FALSE(Ready(slow));
  compiler.release.Notify();
  slow.wait();
  EXPECT_EQ(cache.stats().compiles, 3);
}

// Stopping finishes the compile under way and drops those not begun; every
// submission's future becomes ready.
TEST(CompilePool, StoppingDropsCompilesNotBegunAndReadiesEveryFuture) {
  GatedCompiler compiler;
  KernelCache cache(MemoryOnly(), kVersions, compiler.Fn());
  std::shared_future<void> running, queued;
  std::thread release;
  {
    CompilePool pool(cache, 1);
    running = pool.Submit({"slow one"}, CompileOptions{});
    while (compiler.calls == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    queued = pool.Submit({"never compiled"}, CompileOptions{});
    release = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      compiler.release.Notify();
    });
  }  // the pool stops: waits for "slow one", drops "never compiled"
  release.join();
  EXPECT_TRUE(Ready(running));
  EXPECT_TRUE(Ready(queued));
  EXPECT_EQ(compiler.calls, 1);
}

// After Stop (a process about to exit), a submission compiles nothing and
// is ready at once: GetOrCompile compiles what is asked for later.
TEST(CompilePool, AfterStopASubmissionCompilesNothing) {
  GatedCompiler compiler;
  KernelCache cache(MemoryOnly(), kVersions, compiler.Fn());
  CompilePool pool(cache, 2);
  pool.Submit({"a"}, CompileOptions{}).wait();
  pool.Stop();
  EXPECT_TRUE(Ready(pool.Submit({"b"}, CompileOptions{})));
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_TRUE(cache.GetOrCompile("b", CompileOptions{}).ok());
  EXPECT_EQ(compiler.calls, 2);
}

}  // namespace
}  // namespace kiln::jit
