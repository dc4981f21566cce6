#include "jit/kernel_cache.h"

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jit/cache_entry.h"
#include "jit/cache_file.h"

namespace kiln::jit {
namespace {

// Far above any real CUBIN; guards against reading a huge unrelated file.
constexpr size_t kMaxEntryBytes = size_t{1} << 30;

}  // namespace

KernelCache::KernelCache(CacheOptions options, ToolchainVersions versions, CompileFn compile)
    : options_(std::move(options)), versions_(versions), compile_(std::move(compile)) {}

std::unique_ptr<KernelCache> KernelCache::WithNvrtc(CacheOptions options, const NvrtcApi& nvrtc,
                                                    int driver_version) {
  const ToolchainVersions versions{nvrtc.version_major, nvrtc.version_minor, driver_version};
  return std::make_unique<KernelCache>(
      std::move(options), versions,
      // LoadNvrtc's tables live as long as the process.
      [&nvrtc](absl::string_view source, const CompileOptions& compile_options) {
        return CompileToCubin(nvrtc, source, compile_options);
      });
}

Hash128 KernelCache::Key(absl::string_view source, const CompileOptions& options) const {
  StableHasher hasher;
  hasher.Add(absl::string_view("kiln.kernel_cache"))
      .Add(static_cast<uint64_t>(kCacheEntryVersion))
      .Add(source);
  const std::vector<std::string> flags = options.Flags();
  hasher.Add(static_cast<uint64_t>(flags.size()));
  for (const std::string& flag : flags) hasher.Add(absl::string_view(flag));
  hasher.Add(versions_.nvrtc_major).Add(versions_.nvrtc_minor).Add(versions_.driver_version);
  return hasher.Finish();
}

std::string KernelCache::EntryPath(const Hash128& key) const {
  if (!disk_enabled()) return "";
  return absl::StrCat(options_.directory, "/", key.ToHex(), ".kbin");
}

absl::StatusOr<CachedKernel> KernelCache::GetOrCompile(absl::string_view source,
                                                       const CompileOptions& options) {
  const Hash128 key = Key(source, options);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memory_hits;
      return CachedKernel{key, it->second};
    }
  }
  // No lock held from here on: reading, compiling and writing take
  // milliseconds to seconds. Two threads missing on one key both compile; the
  // first to finish is kept.
  std::shared_ptr<const std::string> cubin;
  if (disk_enabled()) cubin = ReadEntry(key);
  if (cubin == nullptr) {
    absl::StatusOr<std::string> compiled = compile_(source, options);
    {
      absl::MutexLock lock(&mu_);
      ++stats_.compiles;
      if (!compiled.ok()) ++stats_.compile_failures;
    }
    if (!compiled.ok()) return compiled.status();
    cubin = std::make_shared<const std::string>(*std::move(compiled));
    if (disk_enabled()) WriteEntry(key, *cubin);
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = memory_.emplace(key, std::move(cubin));
  return CachedKernel{key, it->second};
}

std::shared_ptr<const std::string> KernelCache::ReadEntry(const Hash128& key) {
  const std::string path = EntryPath(key);
  absl::StatusOr<std::string> entry = ReadWholeFile(path, kMaxEntryBytes);
  if (!entry.ok()) {
    if (absl::IsNotFound(entry.status())) return nullptr;
    {
      absl::MutexLock lock(&mu_);
      ++stats_.read_failures;
    }
    Warn(Warning::kRead, absl::StrCat("kernel cache: ", entry.status().message(),
                                      "; compiling instead"));
    return nullptr;
  }
  absl::StatusOr<absl::string_view> payload = DecodeCacheEntry(*entry, key);
  if (!payload.ok()) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.corrupt_entries;
    }
    Warn(Warning::kCorrupt, absl::StrCat("kernel cache entry ", path, " is corrupt (",
                                         payload.status().message(),
                                         "); recompiling and replacing it"));
    return nullptr;
  }
  auto cubin = std::make_shared<const std::string>(*payload);
  absl::MutexLock lock(&mu_);
  ++stats_.disk_hits;
  return cubin;
}

void KernelCache::WriteEntry(const Hash128& key, const std::string& cubin) {
  absl::Status status = CreateDirectories(options_.directory);
  if (status.ok()) {
    status = WriteFileAtomically(EntryPath(key), EncodeCacheEntry(key, cubin), options_.fsync);
  }
  {
    absl::MutexLock lock(&mu_);
    if (status.ok()) {
      ++stats_.disk_writes;
    } else {
      ++stats_.write_failures;
    }
  }
  if (!status.ok()) {
    Warn(Warning::kWrite,
         absl::StrCat("kernel cache: ", status.message(),
                      "; compiled kernels are not kept on disk (set KILN_CACHE_DIR to a "
                      "writable directory, or KILN_CACHE=0 to turn the disk cache off)"));
  }
}

void KernelCache::Warn(Warning kind, const std::string& message) {
  if (options_.warn) {
    options_.warn(message);
    return;
  }
  {
    // Printed once per kind: an unwritable directory would otherwise repeat
    // for every kernel.
    absl::MutexLock lock(&mu_);
    bool& warned = warned_[static_cast<int>(kind)];
    if (warned) return;
    warned = true;
  }
  std::cerr << "kiln: warning: " << message << "\n";
}

KernelCacheStats KernelCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace kiln::jit
