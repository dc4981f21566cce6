#include "jit/cache_entry.h"

#include "absl/strings/str_cat.h"

namespace kiln::jit {
namespace {

void PutLittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(absl::string_view in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= uint64_t{static_cast<uint8_t>(in[offset + i])} << (8 * i);
  }
  return value;
}

Hash128 Checksum(absl::string_view payload) { return StableHasher().Add(payload).Finish(); }

}  // namespace

std::string EncodeCacheEntry(const Hash128& key, absl::string_view payload) {
  std::string out;
  out.reserve(kCacheEntryHeaderBytes + payload.size());
  out.append(kCacheEntryMagic.data(), kCacheEntryMagic.size());
  PutLittleEndian(out, kCacheEntryVersion, 4);
  PutLittleEndian(out, 0, 4);
  PutLittleEndian(out, key.high, 8);
  PutLittleEndian(out, key.low, 8);
  PutLittleEndian(out, payload.size(), 8);
  const Hash128 checksum = Checksum(payload);
  PutLittleEndian(out, checksum.high, 8);
  PutLittleEndian(out, checksum.low, 8);
  out.append(payload.data(), payload.size());
  return out;
}

absl::StatusOr<absl::string_view> DecodeCacheEntry(absl::string_view entry,
                                                   const Hash128& expected_key) {
  if (entry.size() < kCacheEntryHeaderBytes) {
    return absl::DataLossError(absl::StrCat("truncated: ", entry.size(),
                                            " bytes, shorter than the ", kCacheEntryHeaderBytes,
                                            "-byte header"));
  }
  if (entry.substr(0, kCacheEntryMagic.size()) != kCacheEntryMagic) {
    return absl::DataLossError("not a kiln kernel cache entry (bad magic)");
  }
  const uint64_t version = GetLittleEndian(entry, 8, 4);
  if (version != kCacheEntryVersion) {
    return absl::DataLossError(absl::StrCat("format version ", version, ", expected ",
                                            kCacheEntryVersion));
  }
  const Hash128 key{GetLittleEndian(entry, 16, 8), GetLittleEndian(entry, 24, 8)};
  if (key != expected_key) {
    return absl::DataLossError(
        absl::StrCat("holds key ", key.ToHex(), ", expected ", expected_key.ToHex()));
  }
  const uint64_t size = GetLittleEndian(entry, 32, 8);
  if (size != entry.size() - kCacheEntryHeaderBytes) {
    return absl::DataLossError(absl::StrCat("header says ", size, " payload bytes, file has ",
                                            entry.size() - kCacheEntryHeaderBytes));
  }
  const absl::string_view payload = entry.substr(kCacheEntryHeaderBytes);
  const Hash128 checksum{GetLittleEndian(entry, 40, 8), GetLittleEndian(entry, 48, 8)};
  if (checksum != Checksum(payload)) return absl::DataLossError("payload checksum mismatch");
  return payload;
}

}  // namespace kiln::jit
