#include "tensor/stable_hash.h"

#include <bit>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

Hash128 HashWords(std::initializer_list<uint64_t> words) {
  StableHasher h;
  for (uint64_t w : words) h.Add(w);
  return h.Finish();
}

Hash128 HashStrings(std::initializer_list<absl::string_view> parts) {
  StableHasher h;
  for (absl::string_view p : parts) h.Add(p);
  return h.Finish();
}

// The hash keys the on-disk kernel cache, so its values must not change
// between runs, processes, builds or machines. These literals were computed
// once; a change to the algorithm (which would silently orphan every cached
// kernel) fails here and must come with a cache version bump.
TEST(StableHasher, FixedSequenceGivesFixedValue) {
  StableHasher h;
  h.Add(uint64_t{1})
      .Add(int64_t{-1})
      .Add(3)
      .Add(true)
      .Add(1.5)
      .Add(absl::string_view("kiln"))
      .Add(absl::string_view("a string longer than eight bytes"))
      .Add(Hash128{0x0123456789abcdefull, 0xfedcba9876543210ull});
  EXPECT_EQ(h.Finish().ToHex(), "68f2709bd3acfdd6740c963095c7b906");
}

TEST(StableHasher, EmptyHasherGivesFixedValue) {
  EXPECT_EQ(StableHasher().Finish().ToHex(), "d4efde9450b71e79406fddd3db71d209");
}

TEST(StableHasher, SameInputSameHash) {
  EXPECT_EQ(HashWords({1, 2, 3}), HashWords({1, 2, 3}));
  EXPECT_EQ(HashStrings({"abc", "def"}), HashStrings({"abc", "def"}));
}

TEST(StableHasher, FinishIsRepeatableAndDoesNotEndTheStream) {
  StableHasher h;
  h.Add(uint64_t{7});
  const Hash128 first = h.Finish();
  EXPECT_EQ(h.Finish(), first);
  h.Add(uint64_t{8});
  EXPECT_NE(h.Finish(), first);
  EXPECT_EQ(h.Finish(), HashWords({7, 8}));
}

TEST(StableHasher, DifferentInputsDiffer) {
  EXPECT_NE(HashWords({1}), HashWords({2}));
  EXPECT_NE(HashWords({1, 2}), HashWords({2, 1}));  // order matters
  EXPECT_NE(HashWords({}), HashWords({0}));         // a zero word still counts
  EXPECT_NE(HashWords({0}), HashWords({0, 0}));
  EXPECT_NE(HashWords({0, 1}), HashWords({1, 0}));
  EXPECT_NE(HashWords({~uint64_t{0}}), HashWords({0}));
}

TEST(StableHasher, NoCollisionsAmongManySmallInputs) {
  absl::flat_hash_set<Hash128> all;
  absl::flat_hash_set<uint64_t> highs, lows;
  for (uint64_t a = 0; a < 100; ++a) {
    for (uint64_t b = 0; b < 100; ++b) {
      const Hash128 h = HashWords({a, b});
      all.insert(h);
      highs.insert(h.high);
      lows.insert(h.low);
    }
  }
  // Each lane alone is already collision-free on this set.
  EXPECT_EQ(all.size(), 10000u);
  EXPECT_EQ(highs.size(), 10000u);
  EXPECT_EQ(lows.size(), 10000u);
}

TEST(StableHasher, SingleBitChangesFlipAboutHalfTheOutput) {
  const Hash128 base = HashWords({0x123456789abcdefull, 42});
  for (int bit = 0; bit < 64; ++bit) {
    const Hash128 h = HashWords({0x123456789abcdefull ^ (uint64_t{1} << bit), 42});
    const int flipped = std::popcount(h.high ^ base.high) + std::popcount(h.low ^ base.low);
    EXPECT_GT(flipped, 30) << "bit " << bit;
    EXPECT_LT(flipped, 98) << "bit " << bit;
  }
}

TEST(StableHasher, TypedOverloadsAreDocumentedWidenings) {
  EXPECT_EQ(StableHasher().Add(5).Finish(), StableHasher().Add(uint64_t{5}).Finish());
  EXPECT_EQ(StableHasher().Add(-1).Finish(), StableHasher().Add(int64_t{-1}).Finish());
  EXPECT_EQ(StableHasher().Add(int64_t{-1}).Finish(), StableHasher().Add(~uint64_t{0}).Finish());
  EXPECT_EQ(StableHasher().Add(true).Finish(), StableHasher().Add(uint64_t{1}).Finish());
  EXPECT_EQ(StableHasher().Add(false).Finish(), StableHasher().Add(uint64_t{0}).Finish());
  EXPECT_EQ(StableHasher().Add(1.0).Finish(),
            StableHasher().Add(std::bit_cast<uint64_t>(1.0)).Finish());
  const Hash128 inner{11, 22};
  EXPECT_EQ(StableHasher().Add(inner).Finish(), HashWords({11, 22}));
}

TEST(StableHasher, DoublesHashByBitPattern) {
  EXPECT_NE(StableHasher().Add(0.0).Finish(), StableHasher().Add(-0.0).Finish());
  EXPECT_NE(StableHasher().Add(1.0).Finish(), StableHasher().Add(2.0).Finish());
  EXPECT_EQ(StableHasher().Add(0.1 + 0.2).Finish(), StableHasher().Add(0.1 + 0.2).Finish());
}

TEST(StableHasher, StringsAreLengthPrefixed) {
  EXPECT_NE(HashStrings({"ab", "c"}), HashStrings({"a", "bc"}));
  EXPECT_NE(HashStrings({"abc"}), HashStrings({"ab", "c"}));
  EXPECT_NE(HashStrings({""}), HashStrings({}));
  EXPECT_NE(HashStrings({"", ""}), HashStrings({""}));
  EXPECT_NE(HashStrings({"a"}), HashStrings({absl::string_view("a\0", 2)}));
  EXPECT_NE(HashStrings({absl::string_view("\0", 1)}), HashStrings({""}));
  // Across the 8-byte word boundary.
  EXPECT_NE(HashStrings({"abcdefgh"}), HashStrings({"abcdefghi"}));
  EXPECT_NE(HashStrings({"abcdefgh", "i"}), HashStrings({"abcdefg", "hi"}));
  EXPECT_NE(HashStrings({"0123456789abcdefX"}), HashStrings({"0123456789abcdefY"}));
  // The encoding: the length as a word, then the bytes in little-endian
  // 8-byte words, zero-padded. Part of the stable format.
  StableHasher words;
  words.Add(uint64_t{9}).Add(uint64_t{0x6867666564636261ull}).Add(uint64_t{'i'});
  EXPECT_EQ(HashStrings({"abcdefghi"}), words.Finish());
}

TEST(StableHasher, StringContentMatters) {
  EXPECT_NE(HashStrings({"pos"}), HashStrings({"len"}));
  EXPECT_NE(HashStrings({"pos"}), HashStrings({"Pos"}));
  EXPECT_EQ(HashStrings({std::string("pos")}), HashStrings({"pos"}));
}

TEST(Hash128, ToHex) {
  EXPECT_EQ((Hash128{0x0123456789abcdefull, 0xfedcba9876543210ull}).ToHex(),
            "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(Hash128{}.ToHex(), std::string(32, '0'));
  EXPECT_EQ((Hash128{0, 1}).ToHex(), "00000000000000000000000000000001");
  EXPECT_EQ((Hash128{1, 0}).ToHex(), "00000000000000010000000000000000");
  EXPECT_EQ((Hash128{~uint64_t{0}, ~uint64_t{0}}).ToHex(), std::string(32, 'f'));
}

TEST(Hash128, EqualityAndAbslHash) {
  EXPECT_EQ((Hash128{1, 2}), (Hash128{1, 2}));
  EXPECT_NE((Hash128{1, 2}), (Hash128{2, 1}));
  absl::flat_hash_set<Hash128> set = {Hash128{1, 2}, Hash128{1, 2}, Hash128{2, 1}};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_TRUE(set.contains(Hash128{2, 1}));
}

}  // namespace
}  // namespace kiln
