// A hash that is the same in every process and on every run, for keys that
// outlive a process (the kernel cache on disk). absl::Hash is salted per
// process, so it cannot serve here.
#ifndef KILN_TENSOR_STABLE_HASH_H_
#define KILN_TENSOR_STABLE_HASH_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"


namespace kiln {

struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;

  std::string ToHex() const;  // 32 lowercase hex digits
  friend bool operator==(const Hash128&, const Hash128&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const Hash128& v) {
    return H::combine(std::move(h), v.high, v.low);
  }
};

// Accumulates words into two independently mixed 64-bit lanes.
class StableHasher {
 public:
  StableHasher& Add(uint64_t word);
  StableHasher& Add(int64_t word) { return Add(static_cast<uint64_t>(word)); }
  StableHasher& Add(int word) { return Add(static_cast<uint64_t>(static_cast<int64_t>(word))); }
  StableHasher& Add(bool word) { return Add(static_cast<uint64_t>(word)); }
  StableHasher& Add(double value);  // by bit pattern (-0.0 != 0.0)
  StableHasher& Add(absl::string_view text);  // length-prefixed
  StableHasher& Add(const Hash128& hash) { return Add(hash.high).Add(hash.low); }

  Hash128 Finish() const;

 private:
  uint64_t a_ = 0x9e3779b97f4a7c15ull;
  uint64_t b_ = 0xc2b2ae3d27d4eb4full;
  uint64_t count_ = 0;
};

}  // namespace kiln

#endif  // KILN_TENSOR_STABLE_HASH_H_
