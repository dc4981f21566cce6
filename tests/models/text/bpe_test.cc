#include "models/text/bpe.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::DecodeBytes;
using ::kiln::models::testing::Ids;
using ::kiln::models::testing::TinyJson;
using ::kiln::models::testing::Tokens;
using ::testing::ElementsAre;

// A BPE that merges (ignore_merges off) over `vocab` with `merges`.
nlohmann::json Merging(const std::vector<std::string>& vocab, nlohmann::json merges) {
  nlohmann::json root = TinyJson(vocab, std::move(merges));
  root["model"]["ignore_merges"] = false;
  return root;
}

TEST(Bpe, LowestRankMergesFirst) {
  const std::vector<std::string> vocab = {"a", "b", "c", "ab", "bc", "abc"};
  EXPECT_THAT(Tokens(*Build(Merging(vocab, {"a b", "ab c"})), "abc"), ElementsAre("abc"));
  EXPECT_THAT(Tokens(*Build(Merging(vocab, {"b c", "a b"})), "abc"), ElementsAre("a", "bc"));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  const auto t = Build(Merging({"a", "aa"}, {"a a"}));
  EXPECT_THAT(Tokens(*t, "aaa"), ElementsAre("aa", "a"));
  EXPECT_THAT(Tokens(*t, "aaaaa"), ElementsAre("aa", "aa", "a"));
}

TEST(Bpe, MergesAsPairs) {
  const std::vector<std::string> vocab = {"a", "b", "c", "ab", "abc"};
  const nlohmann::json pairs =
      nlohmann::json::array({nlohmann::json::array({"a", "b"}), nlohmann::json::array({"ab", "c"})});
  EXPECT_THAT(Tokens(*Build(Merging(vocab, pairs)), "abc"), ElementsAre("abc"));
}

TEST(Bpe, ARepeatedMergeTakesItsLastRank) {
  const std::vector<std::string> vocab = {"a", "b", "c", "ab", "bc"};
  EXPECT_THAT(Tokens(*Build(Merging(vocab, {"a b", "b c", "a b"})), "abc"), ElementsAre("a", "bc"));
}

TEST(Bpe, IgnoreMergesTakesAWholeWordFromTheVocabulary) {
  const std::vector<std::string> vocab = {"a", "b", "ab"};
  EXPECT_THAT(Tokens(*Build(TinyJson(vocab)), "ab"), ElementsAre("ab"));
  EXPECT_THAT(Tokens(*Build(Merging(vocab, nlohmann::json::array())), "ab"), ElementsAre("a", "b"));
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersInBytes) {
  nlohmann::json root = Merging({"<unk>", "a", "<0xC3>", "<0xA9>"}, nlohmann::json::array());
  root["model"]["byte_fallback"] = true;
  root["model"]["unk_token"] = "<unk>";
  root["decoder"] = {{"type", "ByteFallback"}};
  const auto t = Build(root);
  EXPECT_THAT(Tokens(*t, "a\u00e9"), ElementsAre("a", "<0xC3>", "<0xA9>"));
  // z has no byte token: the unk token stands for it.
  EXPECT_THAT(Tokens(*t, "z"), ElementsAre("<unk>"));
  EXPECT_EQ(DecodeBytes(*t, Ids(*t, "a\u00e9")), "a\u00e9");
}

TEST(Bpe, UnknownCharactersFuseOrNot) {
  nlohmann::json root = Merging({"<unk>", "a"}, nlohmann::json::array());
  root["model"]["unk_token"] = "<unk>";
  EXPECT_THAT(Tokens(*Build(root), "axyza"), ElementsAre("a", "<unk>", "<unk>", "<unk>", "a"));
  root["model"]["fuse_unk"] = true;
  EXPECT_THAT(Tokens(*Build(root), "axyza"), ElementsAre("a", "<unk>", "a"));
}

TEST(Bpe, WithoutUnkTokenUnknownCharactersAreDropped) {
  EXPECT_THAT(Tokens(*Build(Merging({"a"}, nlohmann::json::array())), "axa"), ElementsAre("a", "a"));
}

TEST(Bpe, ContinuingSubwordPrefix) {
  nlohmann::json root = Merging({"a", "##b", "##c", "ab", "abc"}, {"a ##b", "ab ##c"});
  root["model"]["continuing_subword_prefix"] = "##";
  EXPECT_THAT(Tokens(*Build(root), "abc"), ElementsAre("abc"));
  EXPECT_THAT(Tokens(*Build(root), "acb"), ElementsAre("a", "##c", "##b"));
}

TEST(Bpe, EndOfWordSuffix) {
  nlohmann::json root = Merging({"a", "b", "b</w>", "ab</w>"}, {"a b</w>"});
  root["model"]["end_of_word_suffix"] = "</w>";
  EXPECT_THAT(Tokens(*Build(root), "ab"), ElementsAre("ab</w>"));
  EXPECT_THAT(Tokens(*Build(root), "bab"), ElementsAre("b", "ab</w>"));
}

TEST(Bpe, ZeroDropoutIsDeterministic) {
  nlohmann::json root = Merging({"a", "b", "ab"}, {"a b"});
  root["model"]["dropout"] = 0.0;
  EXPECT_THAT(Tokens(*Build(root), "ab"), ElementsAre("ab"));
}

TEST(Bpe, IdsMayLeaveHoles) {
  nlohmann::json root = TinyJson({});
  root["model"]["vocab"] = {{"a", 0}, {"b", 5}};
  const auto t = Build(root);
  EXPECT_EQ(t->vocab_size(), 6);
  EXPECT_THAT(Ids(*t, "ba"), ElementsAre(5, 0));
  EXPECT_EQ(DecodeBytes(*t, {0, 3, 5}), "a b");  // no decoder: tokens joined by spaces, the hole skipped
}

}  // namespace
}  // namespace kiln::models
