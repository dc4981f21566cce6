// Each normalizer through a whole tokenizer: the vocabulary holds the
// normalized text as one word, so the text comes out as that one token.
#include "models/text/normalizers.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::TinyJson;
using ::kiln::models::testing::Tokens;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Normalized(const nlohmann::json& normalizer, const std::string& text,
                                    const std::vector<std::string>& vocab) {
  nlohmann::json root = TinyJson(vocab);
  root["normalizer"] = normalizer;
  auto t = Build(root);
  return t ? Tokens(*t, text) : std::vector<std::string>{"<build failed>"};
}

TEST(Normalizers, UnicodeForms) {
  EXPECT_THAT(Normalized({{"type", "NFC"}}, "Cafe\u0301", {"Caf\u00e9"}), ElementsAre("Caf\u00e9"));
  EXPECT_THAT(Normalized({{"type", "NFD"}}, "Caf\u00e9", {"Cafe\u0301"}), ElementsAre("Cafe\u0301"));
  EXPECT_THAT(Normalized({{"type", "NFKC"}}, "\ufb01ne", {"fine"}), ElementsAre("fine"));
  EXPECT_THAT(Normalized({{"type", "NFKD"}}, "\ufb01\u00e9", {"fie\u0301"}), ElementsAre("fie\u0301"));
}

TEST(Normalizers, LowercaseAsRust) {
  // İ lowercases to two characters (i and a combining dot), as Rust's does.
  EXPECT_THAT(Normalized({{"type", "Lowercase"}}, "HeLLo \u0130\u03a3", {"hello i\u0307\u03c3"}),
              ElementsAre("hello i\u0307\u03c3"));
}

TEST(Normalizers, StripEitherSide) {
  EXPECT_THAT(
      Normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t hi \u3000", {"hi"}),
      ElementsAre("hi"));
  EXPECT_THAT(Normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, "  hi ", {"hi "}),
              ElementsAre("hi "));
  EXPECT_THAT(
      Normalized({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}, "  hi ", {"  hi"}),
      ElementsAre("  hi"));
}

TEST(Normalizers, ReplaceStringAndRegex) {
  EXPECT_THAT(Normalized({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}},
                         "a b c", {"a\u2581b\u2581c"}),
              ElementsAre("a\u2581b\u2581c"));
  // The literal's regex characters are not special.
  EXPECT_THAT(
      Normalized({{"type", "Replace"}, {"pattern", {{"String", ".*"}}}, {"content", "-"}}, "a.*b", {"a-b"}),
      ElementsAre("a-b"));
  EXPECT_THAT(Normalized({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                         "a \t\n b", {"a b"}),
              ElementsAre("a b"));
}

TEST(Normalizers, PrependOnlyToNonEmptyText) {
  const nlohmann::json prepend = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  EXPECT_THAT(Normalized(prepend, "hi", {"\u2581hi"}), ElementsAre("\u2581hi"));
  EXPECT_THAT(Normalized(prepend, "", {"\u2581"}), IsEmpty());
}

TEST(Normalizers, SequenceAsLlama2Writes) {
  const nlohmann::json sequence = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", "\u2581"}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  EXPECT_THAT(Normalized(sequence, "Hello world", {"\u2581Hello\u2581world"}),
              ElementsAre("\u2581Hello\u2581world"));
}

TEST(Normalizers, ReplaceThatGrowsWithoutEndIsRefused) {
  // An empty match everywhere, chained: each step multiplies the text.
  nlohmann::json steps = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) {
    steps.push_back({{"type", "Replace"}, {"pattern", {{"Regex", ""}}}, {"content", "abcdefgh"}});
  }
  nlohmann::json root = TinyJson({"a"});
  root["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
  auto t = Build(root);
  ASSERT_NE(t, nullptr);
  absl::StatusOr<std::vector<int32_t>> ids = t->Encode("aaaa", {});
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ids.status().message(), ::testing::HasSubstr("longer than"));
}

}  // namespace
}  // namespace kiln::models
