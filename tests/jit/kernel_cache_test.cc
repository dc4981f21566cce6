// The kernel cache with a fake compiler: memory and disk hits, and every way
// an entry on disk can be damaged.
#include "jit/kernel_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/cache_entry.h"
#include "tests/test_util.h"
#include "jit/cache_file.h"

namespace kiln::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// A fresh directory, removed with its contents at the end of the test.
using TempDir = ::kiln::testing::ScopedTempDir;

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

// Stands in for NVRTC: the "CUBIN" spells out what it was compiled from.
struct FakeCompiler {
  int calls = 0;
  bool fail = false;
  KernelCache::CompileFn Fn() {
    return [this](absl::string_view source,
                  const CompileOptions& options) -> absl::StatusOr<std::string> {
      ++calls;
      if (fail) return absl::InvalidArgumentError("nvrtcCompileProgram: syntax error");
      return absl::StrCat("CUBIN[", source, "|", absl::StrJoin(options.Flags(), " "), "]");
    };
  }
};

constexpr ToolchainVersions kVersions{13, 0, 13000};

struct Fixture {
  TempDir dir;
  FakeCompiler compiler;
  std::vector<std::string> warnings;

  CacheOptions Options() {
    CacheOptions options;
    options.directory = dir.path();
    options.warn = [this](absl::string_view message) { warnings.emplace_back(message); };
    return options;
  }
  KernelCache NewCache() { return KernelCache(Options(), kVersions, compiler.Fn()); }
};

constexpr absl::string_view kSource = "extern \"C\" __global__ void k() {}";

TEST(KernelCache, SecondLookupIsAMemoryHit) {
  Fixture f;
  KernelCache cache = f.NewCache();
  absl::StatusOr<CachedKernel> first = cache.GetOrCompile(kSource, CompileOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<CachedKernel> second = cache.GetOrCompile(kSource, CompileOptions());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(f.compiler.calls, 1);
  EXPECT_EQ(second->cubin, first->cubin);  // the same bytes, not a copy
  EXPECT_EQ(second->key, first->key);
  const KernelCacheStats stats = cache.stats();
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.memory_hits, 1);
  EXPECT_EQ(stats.disk_hits, 0);
  EXPECT_EQ(stats.disk_writes, 1);
}

TEST(KernelCache, ANewCacheObjectHitsTheDisk) {
  Fixture f;
  std::string cubin;
  {
    KernelCache cache = f.NewCache();
    cubin = *cache.GetOrCompile(kSource, CompileOptions())->cubin;
  }
  KernelCache second_process = f.NewCache();
  absl::StatusOr<CachedKernel> kernel = second_process.GetOrCompile(kSource, CompileOptions());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(*kernel->cubin, cubin);
  EXPECT_EQ(f.compiler.calls, 1);
  EXPECT_EQ(second_process.stats().disk_hits, 1);
  EXPECT_EQ(second_process.stats().compiles, 0);
  // ... and then from memory.
  ASSERT_TRUE(second_process.GetOrCompile(kSource, CompileOptions()).ok());
  EXPECT_EQ(second_process.stats().memory_hits, 1);
  EXPECT_TRUE(f.warnings.empty());
}

TEST(KernelCache, EntryIsNamedByTheHexKeyAndNoTemporaryRemains) {
  Fixture f;
  KernelCache cache = f.NewCache();
  const CachedKernel kernel = *cache.GetOrCompile(kSource, CompileOptions());
  EXPECT_EQ(cache.EntryPath(kernel.key), f.dir.path() + "/" + kernel.key.ToHex() + ".kbin");
  EXPECT_THAT(FilesIn(f.dir.path()), ::testing::ElementsAre(kernel.key.ToHex() + ".kbin"));
  const std::string entry = ReadFile(cache.EntryPath(kernel.key));
  absl::StatusOr<absl::string_view> payload = DecodeCacheEntry(entry, kernel.key);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, *kernel.cubin);
}

TEST(KernelCache, KeyCoversSourceOptionsAndToolchain) {
  FakeCompiler compiler;
  KernelCache cache(CacheOptions{.disk = false}, kVersions, compiler.Fn());
  const Hash128 base = cache.Key(kSource, CompileOptions());
  EXPECT_EQ(cache.Key(kSource, CompileOptions()), base);
  EXPECT_NE(cache.Key("extern \"C\" __global__ void k2() {}", CompileOptions()), base);
  CompileOptions arch;
  arch.arch = "sm_80";
  EXPECT_NE(cache.Key(kSource, arch), base);
  CompileOptions fast;
  fast.fast_math = true;
  EXPECT_NE(cache.Key(kSource, fast), base);
  CompileOptions defined;
  defined.defines = {{"TILE", "64"}};
  EXPECT_NE(cache.Key(kSource, defined), base);
  for (ToolchainVersions other : {ToolchainVersions{12, 8, 13000}, ToolchainVersions{13, 1, 13000},
                                  ToolchainVersions{13, 0, 12080}}) {
    KernelCache other_cache(CacheOptions{.disk = false}, other, compiler.Fn());
    EXPECT_NE(other_cache.Key(kSource, CompileOptions()), base);
  }
}

TEST(KernelCache, CompileErrorsAreReturnedAndNotCached) {
  Fixture f;
  f.compiler.fail = true;
  KernelCache cache = f.NewCache();
  absl::StatusOr<CachedKernel> kernel = cache.GetOrCompile(kSource, CompileOptions());
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kernel.status().message(), HasSubstr("syntax error"));
  EXPECT_FALSE(cache.GetOrCompile(kSource, CompileOptions()).ok());
  EXPECT_EQ(f.compiler.calls, 2);
  EXPECT_EQ(cache.stats().compile_failures, 2);
  EXPECT_THAT(FilesIn(f.dir.path()), SizeIs(0));
}

TEST(KernelCache, DiskOffWritesNothing) {
  Fixture f;
  CacheOptions options = f.Options();
  options.disk = false;
  {
    KernelCache cache(options, kVersions, f.compiler.Fn());
    EXPECT_FALSE(cache.disk_enabled());
    EXPECT_EQ(cache.EntryPath(Hash128{1, 2}), "");
    ASSERT_TRUE(cache.GetOrCompile(kSource, CompileOptions()).ok());
  }
  KernelCache again(options, kVersions, f.compiler.Fn());
  ASSERT_TRUE(again.GetOrCompile(kSource, CompileOptions()).ok());
  EXPECT_EQ(f.compiler.calls, 2);  // nothing survived the first cache
  EXPECT_THAT(FilesIn(f.dir.path()), SizeIs(0));
  EXPECT_EQ(again.stats().disk_writes, 0);
}

TEST(KernelCache, CreatesMissingDirectories) {
  Fixture f;
  CacheOptions options = f.Options();
  options.directory = f.dir.path() + "/a/b/c";
  KernelCache cache(options, kVersions, f.compiler.Fn());
  ASSERT_TRUE(cache.GetOrCompile(kSource, CompileOptions()).ok());
  EXPECT_THAT(FilesIn(options.directory), SizeIs(1));
  EXPECT_EQ(cache.stats().write_failures, 0);
}

TEST(KernelCache, FsyncedEntriesAreReadBack) {
  Fixture f;
  CacheOptions options = f.Options();
  options.fsync = true;
  {
    KernelCache cache(options, kVersions, f.compiler.Fn());
    ASSERT_TRUE(cache.GetOrCompile(kSource, CompileOptions()).ok());
    EXPECT_EQ(cache.stats().disk_writes, 1);
  }
  KernelCache again(options, kVersions, f.compiler.Fn());
  ASSERT_TRUE(again.GetOrCompile(kSource, CompileOptions()).ok());
  EXPECT_EQ(again.stats().disk_hits, 1);
}

// ---- damaged entries: each is detected, counted, recompiled and replaced.

struct Damage {
  const char* name;
  std::function<std::string(const std::string& entry, const std::string& other_entry)> apply;
  const char* reason;  // in the warning
};

std::vector<Damage> Damages() {
  return {
      {"flipped payload byte",
       [](const std::string& e, const std::string&) {
         std::string d = e;
         d[d.size() - 3] ^= 0x01;
         return d;
       },
       "checksum"},
      {"flipped checksum byte",
       [](const std::string& e, const std::string&) {
         std::string d = e;
         d[45] ^= 0x80;
         return d;
       },
       "checksum"},
      {"truncated payload",
       [](const std::string& e, const std::string&) { return e.substr(0, e.size() - 7); },
       "payload bytes"},
      {"truncated header",
       [](const std::string& e, const std::string&) { return e.substr(0, 20); }, "truncated"},
      {"empty file", [](const std::string&, const std::string&) { return std::string(); },
       "truncated"},
      {"wrong magic",
       [](const std::string& e, const std::string&) {
         std::string d = e;
         d[0] = 'X';
         return d;
       },
       "bad magic"},
      {"other format version",
       [](const std::string& e, const std::string&) {
         std::string d = e;
         d[8] = 2;
         return d;
       },
       "format version 2"},
      {"entry of another key",
       [](const std::string&, const std::string& other) { return other; }, "holds key"},
      {"appended garbage", [](const std::string& e, const std::string&) { return e + "xyz"; },
       "payload bytes"},
  };
}

TEST(KernelCache, DamagedEntriesAreDetectedRecompiledAndReplaced) {
  for (const Damage& damage : Damages()) {
    SCOPED_TRACE(damage.name);
    Fixture f;
    std::string path;
    Hash128 key;
    std::string good;
    {
      KernelCache cache = f.NewCache();
      key = cache.GetOrCompile(kSource, CompileOptions())->key;
      const Hash128 other_key = cache.GetOrCompile("other source", CompileOptions())->key;
      path = cache.EntryPath(key);
      good = ReadFile(path);
      WriteFile(path, damage.apply(good, ReadFile(cache.EntryPath(other_key))));
    }
    const int compiles_before = f.compiler.calls;

    KernelCache cache = f.NewCache();
    absl::StatusOr<CachedKernel> kernel = cache.GetOrCompile(kSource, CompileOptions());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ(f.compiler.calls, compiles_before + 1);
    EXPECT_EQ(cache.stats().corrupt_entries, 1);
    EXPECT_EQ(cache.stats().disk_hits, 0);
    EXPECT_EQ(cache.stats().disk_writes, 1);
    ASSERT_THAT(f.warnings, SizeIs(1));
    EXPECT_THAT(f.warnings[0], HasSubstr(path));
    EXPECT_THAT(f.warnings[0], HasSubstr("corrupt"));
    EXPECT_THAT(f.warnings[0], HasSubstr(damage.reason));

    // Replaced by a valid entry, which the next process reads.
    EXPECT_EQ(ReadFile(path), good);
    KernelCache next = f.NewCache();
    ASSERT_TRUE(next.GetOrCompile(kSource, CompileOptions()).ok());
    EXPECT_EQ(next.stats().disk_hits, 1);
    EXPECT_EQ(next.stats().corrupt_entries, 0);
  }
}

TEST(KernelCache, EveryHeaderByteIsChecked) {
  // Flipping any single byte of a valid entry makes it rejected.
  const Hash128 key{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const std::string entry = EncodeCacheEntry(key, "payload bytes of a cubin");
  ASSERT_TRUE(DecodeCacheEntry(entry, key).ok());
  for (size_t i = 0; i < entry.size(); ++i) {
    if (i >= 12 && i < 16) continue;  // reserved
    std::string damaged = entry;
    damaged[i] ^= 0x04;
    EXPECT_FALSE(DecodeCacheEntry(damaged, key).ok()) << "byte " << i;
  }
}

TEST(KernelCache, UnreadableEntryIsCountedAndWorkedAround) {
  Fixture f;
  KernelCache probe = f.NewCache();
  const Hash128 key = probe.Key(kSource, CompileOptions());
  // A directory where the entry should be: it can be neither read nor
  // replaced, yet the compile succeeds.
  ASSERT_EQ(::mkdir(probe.EntryPath(key).c_str(), 0755), 0);
  KernelCache cache = f.NewCache();
  absl::StatusOr<CachedKernel> kernel = cache.GetOrCompile(kSource, CompileOptions());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(cache.stats().read_failures, 1);
  EXPECT_EQ(cache.stats().write_failures, 1);
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_THAT(f.warnings, SizeIs(2));
  // No temporary file is left behind by the failed write.
  EXPECT_THAT(FilesIn(f.dir.path()), ::testing::ElementsAre(key.ToHex() + ".kbin"));
}

}  // namespace
}  // namespace kiln::jit
