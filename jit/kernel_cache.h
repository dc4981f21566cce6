// Compiled kernels (CUBINs), cached in memory and on disk so that a kernel is
// compiled once per machine, not once per process. The executor consults
// this only when its own map (keyed by a trace's structural hash) misses, so
// hashing the source here is off the hot path.
#ifndef KILN_JIT_KERNEL_CACHE_H_
#define KILN_JIT_KERNEL_CACHE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "jit/nvrtc_api.h"
#include "jit/nvrtc_compiler.h"
#include "jit/options.h"
#include "tensor/stable_hash.h"

namespace kiln::jit {

// What else decides the bytes a compile produces, beside source and options.
struct ToolchainVersions {
  int nvrtc_major = 0;
  int nvrtc_minor = 0;
  int driver_version = 0;  // 0 where there is no driver (compiling without a GPU)
};

struct KernelCacheStats {
  int64_t compiles = 0;          // calls of the compile function
  int64_t compile_failures = 0;
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t corrupt_entries = 0;   // entries rejected (then recompiled and replaced)
  int64_t read_failures = 0;     // entries that exist but could not be read
  int64_t disk_writes = 0;
  int64_t write_failures = 0;    // entries that could not be stored (not errors)
};

struct CachedKernel {
  Hash128 key;
  std::shared_ptr<const std::string> cubin;
};

class KernelCache {
 public:
  // Compiles source to a CUBIN; injectable so tests can count and fake it.
  using CompileFn =
      std::function<absl::StatusOr<std::string>(absl::string_view source, const CompileOptions&)>;

  KernelCache(CacheOptions options, ToolchainVersions versions, CompileFn compile);

  // A cache that compiles with NVRTC and keys on its version.
  static std::unique_ptr<KernelCache> WithNvrtc(CacheOptions options, const NvrtcApi& nvrtc,
                                                int driver_version);

  // A hash of the source, CompileOptions::Flags(), the toolchain versions and
  // the entry format version. Its 32-digit hex names the file on disk.
  Hash128 Key(absl::string_view source, const CompileOptions& options) const;

  // The CUBIN for `source` under `options`: from memory, else from disk, else
  // compiled (then stored in both). Only a compile error is an error: a
  // corrupt, unreadable or unwritable entry is counted, warned about and
  // worked around.
  absl::StatusOr<CachedKernel> GetOrCompile(absl::string_view source,
                                            const CompileOptions& options);

  // Where the entry for `key` lives; empty when the disk cache is off.
  std::string EntryPath(const Hash128& key) const;
  bool disk_enabled() const { return options_.disk && !options_.directory.empty(); }

  KernelCacheStats stats() const;
  const CacheOptions& options() const { return options_; }

 private:
  enum class Warning { kCorrupt, kRead, kWrite };
  // Compiled from disk, or nullptr on a miss of any kind.
  std::shared_ptr<const std::string> ReadEntry(const Hash128& key);
  void WriteEntry(const Hash128& key, const std::string& cubin);
  void Warn(Warning kind, const std::string& message);

  const CacheOptions options_;
  const ToolchainVersions versions_;
  const CompileFn compile_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Hash128, std::shared_ptr<const std::string>> memory_ ABSL_GUARDED_BY(mu_);
  KernelCacheStats stats_ ABSL_GUARDED_BY(mu_);
  bool warned_[3] ABSL_GUARDED_BY(mu_) = {false, false, false};
};

}  // namespace kiln::jit

#endif  // KILN_JIT_KERNEL_CACHE_H_
