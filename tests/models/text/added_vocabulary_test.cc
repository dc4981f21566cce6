#include "models/text/added_vocabulary.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::Ids;
using ::kiln::models::testing::TinyJson;
using ::kiln::models::testing::Tokens;
using ::testing::ElementsAre;

nlohmann::json Added(const std::string& content, bool special,
                     nlohmann::json flags = nlohmann::json::object()) {
  nlohmann::json token = {{"id", 0},           {"content", content}, {"single_word", false},
                          {"lstrip", false},   {"rstrip", false},    {"normalized", !special},
                          {"special", special}};
  for (const auto& [key, value] : flags.items()) token[key] = value;
  return token;
}

std::unique_ptr<HfTokenizer> WithAdded(const std::vector<std::string>& vocab, nlohmann::json added,
                                       nlohmann::json normalizer = nullptr) {
  nlohmann::json root = TinyJson(vocab);
  root["added_tokens"] = std::move(added);
  root["normalizer"] = std::move(normalizer);
  return Build(root);
}

TEST(AddedVocabulary, IdsComeAfterTheModelInListOrder) {
  // The ids written in the file do not count; a token the model has keeps
  // the model's id.
  const auto t = WithAdded({"a", "b"}, {Added("<x>", false, {{"id", 7}}), Added("a", true, {{"id", 9}}),
                                        Added("<y>", true, {{"id", 1}})});
  EXPECT_EQ(t->TokenId("<x>"), 2);
  EXPECT_EQ(t->TokenId("a"), 0);
  EXPECT_EQ(t->TokenId("<y>"), 3);
  EXPECT_EQ(t->vocab_size(), 4);
  EXPECT_TRUE(t->IsSpecial(0));
  EXPECT_FALSE(t->IsSpecial(2));
  EXPECT_EQ(t->TokenText(3), "<y>");
}

TEST(AddedVocabulary, NewIdsCountFromTheModelsNumberOfTokens) {
  // Two tokens with ids 0 and 9: a new token takes id 2, as in tokenizers
  // 0.23.2, not 10.
  nlohmann::json root = TinyJson({});
  root["model"]["vocab"] = {{"a", 0}, {"b", 9}};
  root["added_tokens"] = {Added("<x>", true), Added("<y>", true)};
  const auto t = Build(root);
  EXPECT_EQ(t->TokenId("<x>"), 2);
  EXPECT_EQ(t->TokenId("<y>"), 3);
  EXPECT_EQ(t->vocab_size(), 10);
}

TEST(AddedVocabulary, LongestMatchWins) {
  const auto t = WithAdded({"x"}, {Added("<a>", true), Added("<a><b>", true)});
  EXPECT_THAT(Tokens(*t, "x<a><b>x<a>"), ElementsAre("x", "<a><b>", "x", "<a>"));
}

TEST(AddedVocabulary, LstripAndRstripTakeTheSpacesAround) {
  const std::vector<std::string> vocab = {"a", "b", "a ", " b"};
  EXPECT_THAT(Tokens(*WithAdded(vocab, {Added("<m>", true)}), "a <m> b"), ElementsAre("a ", "<m>", " b"));
  EXPECT_THAT(
      Tokens(*WithAdded(vocab, {Added("<m>", true, {{"lstrip", true}, {"rstrip", true}})}), "a <m> b"),
      ElementsAre("a", "<m>", "b"));
  EXPECT_THAT(Tokens(*WithAdded(vocab, {Added("<m>", true, {{"lstrip", true}})}), "a <m> b"),
              ElementsAre("a", "<m>", " b"));
}

TEST(AddedVocabulary, SingleWordMatchesOnlyWholeWords) {
  const auto t = WithAdded({" cab ", "a", "b", "\u00e9"}, {Added("ab", false, {{"single_word", true}})});
  EXPECT_THAT(Tokens(*t, "ab cab ab"), ElementsAre("ab", " cab ", "ab"));
  // é is a word character, so this ab is part of a word.
  EXPECT_THAT(Tokens(*t, "\u00e9ab"), ElementsAre("\u00e9", "a", "b"));
}

TEST(AddedVocabulary, NormalizedTokensMatchTheNormalizedText) {
  const nlohmann::json lowercase = {{"type", "Lowercase"}};
  const std::vector<std::string> vocab = {" world", "hello world"};
  EXPECT_THAT(
      Tokens(*WithAdded(vocab, {Added("hello", false, {{"normalized", true}})}, lowercase), "HELLO world"),
      ElementsAre("hello", " world"));
  EXPECT_THAT(
      Tokens(*WithAdded(vocab, {Added("hello", false, {{"normalized", false}})}, lowercase), "HELLO world"),
      ElementsAre("hello world"));
}

TEST(AddedVocabulary, WithoutParseSpecialOnlySpecialTokensAreText) {
  const auto t = WithAdded({"<", "s", ">"}, {Added("<s>", true), Added("<x>", false)});
  EXPECT_THAT(Tokens(*t, "<s><x>", true, /*parse_special=*/false), ElementsAre("<", "s", ">", "<x>"));
  EXPECT_THAT(Tokens(*t, "<s><x>"), ElementsAre("<s>", "<x>"));
}

TEST(AddedVocabulary, ARepeatedTokenIsAddedOnce) {
  const auto t = WithAdded({"a"}, {Added("<x>", true), Added("<x>", true), Added("<y>", true)});
  EXPECT_EQ(t->TokenId("<x>"), 1);
  EXPECT_EQ(t->TokenId("<y>"), 2);
  EXPECT_EQ(t->vocab_size(), 3);
}

TEST(AddedVocabulary, ANormalizedTokenDecodesInItsNormalizedForm) {
  // As tokenizers 0.23.2 does: the token is matched as "\u2581<s>" and
  // decodes so, and that spelling is not special, so it is not skipped.
  const auto t = WithAdded({"a", "\u2581a"}, {Added("<s>", true, {{"normalized", true}})},
                           {{"type", "Prepend"}, {"prepend", "\u2581"}});
  EXPECT_THAT(Ids(*t, "<s>a"), ElementsAre(2, 0));
  EXPECT_EQ(*t->Decode({2, 0}, true), "\u2581<s> a");
  EXPECT_FALSE(t->IsSpecial(2));
  EXPECT_EQ(t->TokenText(2), "<s>");
}

TEST(AddedVocabulary, SkipSpecialTokensInDecode) {
  const auto t = WithAdded({"a"}, {Added("<s>", true), Added("<x>", false)});
  EXPECT_EQ(*t->Decode(Ids(*t, "<s>a<x>"), false), "<s> a <x>");  // no decoder: joined by spaces
  EXPECT_EQ(*t->Decode(Ids(*t, "<s>a<x>"), true), "a <x>");
}

}  // namespace
}  // namespace kiln::models
