#include "tensor/stable_hash.h"

#include <bit>
#include <cstring>

namespace kiln {
namespace {

// The splitmix64 finalizer: a bijection with full avalanche.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::string Hash128::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(high >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

StableHasher& StableHasher::Add(uint64_t word) {
  ++count_;
  a_ = Mix(a_ ^ word) + std::rotl(b_, 17);
  b_ = Mix(b_ + word * 0xff51afd7ed558ccdull + count_);
  return *this;
}

StableHasher& StableHasher::Add(double value) {
  return Add(std::bit_cast<uint64_t>(value));
}

StableHasher& StableHasher::Add(absl::string_view text) {
  Add(static_cast<uint64_t>(text.size()));
  for (size_t i = 0; i < text.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + i, std::min<size_t>(8, text.size() - i));
    Add(word);
  }
  return *this;
}

Hash128 StableHasher::Finish() const {
  return Hash128{Mix(a_ ^ std::rotl(b_, 29) ^ count_), Mix(b_ + a_ * 3)};
}

}  // namespace kiln
