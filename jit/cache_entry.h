// The on-disk form of one kernel cache entry: a fixed header, then the
// CUBIN. Anything that does not decode exactly is rejected, never trusted:
// a cache directory is shared by processes and kiln versions, and can be
// truncated by a full disk or edited by hand.
//
//   offset  size  field
//        0     8  magic "KILNKRNL"
//        8     4  format version (kCacheEntryVersion), little-endian
//       12     4  reserved, 0
//       16    16  the full key (Hash128 high, low), little-endian
//       32     8  payload size in bytes
//       40    16  payload checksum (StableHasher of the payload)
//       56     -  payload
#ifndef KILN_JIT_CACHE_ENTRY_H_
#define KILN_JIT_CACHE_ENTRY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tensor/stable_hash.h"

namespace kiln::jit {

inline constexpr absl::string_view kCacheEntryMagic = "KILNKRNL";
inline constexpr uint32_t kCacheEntryVersion = 1;
inline constexpr size_t kCacheEntryHeaderBytes = 56;

std::string EncodeCacheEntry(const Hash128& key, absl::string_view payload);

// The payload (a view into `entry`), or DataLoss saying what is wrong: too
// short, bad magic, another format version, another key, a size that does
// not match, a bad checksum.
absl::StatusOr<absl::string_view> DecodeCacheEntry(absl::string_view entry,
                                                   const Hash128& expected_key);

}  // namespace kiln::jit

#endif  // KILN_JIT_CACHE_ENTRY_H_
