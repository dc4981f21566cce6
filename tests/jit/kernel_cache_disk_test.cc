// The kernel cache's disk directory under stress: unwritable places, several
// processes filling it at once, and the environment that configures it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/cache_entry.h"
#include "tests/test_util.h"
#include "jit/kernel_cache.h"
#include "jit/options.h"

namespace kiln::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// A fresh directory, removed with its contents at the end of the test.
using TempDir = ::kiln::testing::ScopedTempDir;

constexpr ToolchainVersions kVersions{13, 0, 13000};

KernelCache::CompileFn Echo(int* calls) {
  return [calls](absl::string_view source, const CompileOptions&) -> absl::StatusOr<std::string> {
    ++*calls;
    return absl::StrCat("CUBIN:", source);
  };
}

KernelCache::CompileFn MustNotCompile() {
  return [](absl::string_view source, const CompileOptions&) -> absl::StatusOr<std::string> {
    return absl::InternalError(absl::StrCat("unexpected compile of ", source));
  };
}

TEST(KernelCacheDisk, UnwritableDirectoryStillCompiles) {
  TempDir dir;
  // A regular file where a parent directory should be: not writable even by
  // root, unlike a chmod'ed directory.
  const std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  std::vector<std::string> warnings;
  CacheOptions options;
  options.directory = blocker + "/cache";
  options.warn = [&](absl::string_view message) { warnings.emplace_back(message); };
  int calls = 0;
  KernelCache cache(options, kVersions, Echo(&calls));
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<CachedKernel> kernel = cache.GetOrCompile(absl::StrCat("k", i), CompileOptions());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ(*kernel->cubin, absl::StrCat("CUBIN:k", i));
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(cache.stats().write_failures, 3);
  EXPECT_EQ(cache.stats().disk_writes, 0);
  ASSERT_THAT(warnings, SizeIs(3));
  EXPECT_THAT(warnings[0], HasSubstr(blocker));
  EXPECT_THAT(warnings[0], HasSubstr("KILN_CACHE_DIR"));
  // Still cached in memory.
  ASSERT_TRUE(cache.GetOrCompile("k0", CompileOptions()).ok());
  EXPECT_EQ(cache.stats().memory_hits, 1);
}

TEST(KernelCacheDisk, ReadOnlyDirectoryStillCompiles) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  CacheOptions options;
  options.directory = dir.path();
  options.warn = [](absl::string_view) {};
  int calls = 0;
  KernelCache cache(options, kVersions, Echo(&calls));
  ASSERT_TRUE(cache.GetOrCompile("k", CompileOptions()).ok());
  EXPECT_EQ(cache.stats().write_failures, 1);
  ::chmod(dir.path().c_str(), 0755);
}

TEST(KernelCacheDisk, DefaultWarningIsPrintedOncePerKind) {
  TempDir dir;
  const std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  CacheOptions options;
  options.directory = blocker;  // a file, not a directory
  int calls = 0;
  KernelCache cache(options, kVersions, Echo(&calls));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(cache.GetOrCompile("a", CompileOptions()).ok());
  ASSERT_TRUE(cache.GetOrCompile("b", CompileOptions()).ok());
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(printed, HasSubstr("kiln: warning: kernel cache:"));
  EXPECT_EQ(printed.find("kiln: warning"), printed.rfind("kiln: warning")) << printed;
  EXPECT_EQ(cache.stats().write_failures, 2);
}

// Several processes (fork) fill one directory at once, with keys they share
// and keys of their own, each through several cache objects so that reads
// race renames. All must succeed and leave only valid entries.
TEST(KernelCacheDisk, ConcurrentProcessesFillOneDirectory) {
  TempDir dir;
  constexpr int kProcesses = 4;
  constexpr int kShared = 20;
  constexpr int kOwn = 10;
  constexpr int kRounds = 3;
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: no gtest assertions, just an exit code.
      ::close(start[1]);
      char byte;
      (void)::read(start[0], &byte, 1);  // returns at EOF, when the parent starts everyone
      int failures = 0;
      for (int round = 0; round < kRounds; ++round) {
        CacheOptions options;
        options.directory = dir.path();
        options.warn = [&](absl::string_view) { ++failures; };
        int calls = 0;
        KernelCache cache(options, kVersions, Echo(&calls));
        for (int i = 0; i < kShared + kOwn; ++i) {
          const std::string source =
              i < kShared ? absl::StrCat("shared ", i) : absl::StrCat("own ", p, " ", i);
          absl::StatusOr<CachedKernel> kernel = cache.GetOrCompile(source, CompileOptions());
          if (!kernel.ok() || *kernel->cubin != "CUBIN:" + source) ++failures;
        }
        const KernelCacheStats stats = cache.stats();
        if (stats.corrupt_entries != 0 || stats.write_failures != 0 || stats.read_failures != 0) {
          ++failures;
        }
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " failed";
  }

  // Every entry is whole: a cache that may not compile finds them all.
  CacheOptions options;
  options.directory = dir.path();
  KernelCache reader(options, kVersions, MustNotCompile());
  std::vector<std::string> sources;
  for (int i = 0; i < kShared; ++i) sources.push_back(absl::StrCat("shared ", i));
  for (int p = 0; p < kProcesses; ++p) {
    for (int i = kShared; i < kShared + kOwn; ++i) sources.push_back(absl::StrCat("own ", p, " ", i));
  }
  for (const std::string& source : sources) {
    absl::StatusOr<CachedKernel> kernel = reader.GetOrCompile(source, CompileOptions());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ(*kernel->cubin, "CUBIN:" + source);
  }
  EXPECT_EQ(reader.stats().disk_hits, static_cast<int64_t>(sources.size()));
  // No temporary files are left.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_TRUE(absl::EndsWith(entry.path().filename().string(), ".kbin")) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, sources.size());
}

// ---- configuration from the environment

// Sets (or, with nullopt, unsets) a variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(JitOptions, CacheDirectoryDefaultsUnderHome) {
  ScopedEnv dir("KILN_CACHE_DIR", std::nullopt);
  ScopedEnv cache("KILN_CACHE", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  const CacheOptions options = CacheOptions::FromEnvironment();
  EXPECT_TRUE(options.disk);
  EXPECT_EQ(options.directory, "/home/someone/.cache/kiln");
}

TEST(JitOptions, KilnCacheDirMovesTheCache) {
  ScopedEnv dir("KILN_CACHE_DIR", "/scratch/kiln-cache");
  ScopedEnv cache("KILN_CACHE", std::nullopt);
  const CacheOptions options = CacheOptions::FromEnvironment();
  EXPECT_TRUE(options.disk);
  EXPECT_EQ(options.directory, "/scratch/kiln-cache");
}

TEST(JitOptions, KilnCacheZeroTurnsTheDiskOff) {
  ScopedEnv dir("KILN_CACHE_DIR", "/scratch/kiln-cache");
  for (const char* off : {"0", "off", "false", "NO", " 0 "}) {
    ScopedEnv cache("KILN_CACHE", off);
    EXPECT_FALSE(CacheOptions::FromEnvironment().disk) << off;
  }
  for (const char* on : {"1", "on", ""}) {
    ScopedEnv cache("KILN_CACHE", on);
    EXPECT_TRUE(CacheOptions::FromEnvironment().disk) << on;
  }
}

TEST(JitOptions, KilnCacheZeroMeansNoFilesWritten) {
  TempDir tmp;
  ScopedEnv dir("KILN_CACHE_DIR", tmp.path());
  ScopedEnv cache("KILN_CACHE", "0");
  int calls = 0;
  KernelCache kernels(CacheOptions::FromEnvironment(), kVersions, Echo(&calls));
  ASSERT_TRUE(kernels.GetOrCompile("k", CompileOptions()).ok());
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
}

TEST(JitOptions, NoHomeMeansNoDiskCache) {
  ScopedEnv dir("KILN_CACHE_DIR", std::nullopt);
  ScopedEnv home("HOME", std::nullopt);
  int calls = 0;
  KernelCache kernels(CacheOptions::FromEnvironment(), kVersions, Echo(&calls));
  EXPECT_FALSE(kernels.disk_enabled());
}

TEST(JitOptions, LibraryPathsFromTheEnvironment) {
  {
    ScopedEnv cuda("KILN_CUDA_LIBRARY", "/opt/driver/libcuda.so.1");
    ScopedEnv nvrtc("KILN_NVRTC_LIBRARY", "/opt/cuda/lib64/libnvrtc.so.12");
    const LibraryOptions options = LibraryOptions::FromEnvironment();
    EXPECT_EQ(options.cuda_library, "/opt/driver/libcuda.so.1");
    EXPECT_EQ(options.nvrtc_library, "/opt/cuda/lib64/libnvrtc.so.12");
  }
  ScopedEnv cuda("KILN_CUDA_LIBRARY", std::nullopt);
  ScopedEnv nvrtc("KILN_NVRTC_LIBRARY", std::nullopt);
  const LibraryOptions options = LibraryOptions::FromEnvironment();
  EXPECT_EQ(options.cuda_library, "");
  EXPECT_EQ(options.nvrtc_library, "");
}

}  // namespace
}  // namespace kiln::jit
