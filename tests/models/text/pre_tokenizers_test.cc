// Each pre-tokenizer through a whole tokenizer whose vocabulary holds every
// expected word, so the words come out as tokens one for one.
#include "models/text/pre_tokenizers.h"

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

std::vector<std::string> Words(const nlohmann::json& pre_tokenizer, const std::string& text,
                               const std::vector<std::string>& vocab,
                               const nlohmann::json& added = nlohmann::json::array()) {
  nlohmann::json root = TinyJson(vocab);
  root["pre_tokenizer"] = pre_tokenizer;
  root["added_tokens"] = added;
  auto t = Build(root);
  return t ? Tokens(*t, text) : std::vector<std::string>{"<build failed>"};
}

nlohmann::json SplitOnDash(const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}

const std::vector<std::string> kDashWords = {"a", "b", "c", "-", "a-", "b-", "-b", "-c", "--"};

TEST(PreTokenizers, SplitBehaviors) {
  EXPECT_THAT(Words(SplitOnDash("Removed"), "a-b--c", kDashWords), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Words(SplitOnDash("Isolated"), "a-b--c", kDashWords),
              ElementsAre("a", "-", "b", "-", "-", "c"));
  EXPECT_THAT(Words(SplitOnDash("MergedWithPrevious"), "a-b--c", kDashWords),
              ElementsAre("a-", "b-", "-", "c"));
  EXPECT_THAT(Words(SplitOnDash("MergedWithNext"), "a-b--c", kDashWords), ElementsAre("a", "-b", "-", "-c"));
  EXPECT_THAT(Words(SplitOnDash("Contiguous"), "a-b--c", kDashWords), ElementsAre("a", "-", "b", "--", "c"));
  EXPECT_THAT(Words(SplitOnDash("Removed", /*invert=*/true), "a-b--c", kDashWords),
              ElementsAre("-", "-", "-"));
}

TEST(PreTokenizers, SplitOnARegex) {
  const nlohmann::json digits = {{"type", "Split"},
                                 {"pattern", {{"Regex", "\\p{N}{1,3}"}}},
                                 {"behavior", "Isolated"},
                                 {"invert", false}};
  EXPECT_THAT(Words(digits, "x12345", {"x", "123", "45"}), ElementsAre("x", "123", "45"));
}

TEST(PreTokenizers, WhitespaceKeepsWordsAndPunctuationRuns) {
  EXPECT_THAT(Words({{"type", "Whitespace"}}, "Hello, world!?  x_y", {"Hello", ",", "world", "!?", "x_y"}),
              ElementsAre("Hello", ",", "world", "!?", "x_y"));
}

TEST(PreTokenizers, WhitespaceUsesTheRegexCratesWordClass) {
  // ½ is a number but not a word character there (Oniguruma's \w has it).
  EXPECT_THAT(Words({{"type", "Whitespace"}}, "\u00bdabc x", {"\u00bd", "abc", "x"}),
              ElementsAre("\u00bd", "abc", "x"));
}

TEST(PreTokenizers, WhitespaceSplitOnUnicodeSpace) {
  EXPECT_THAT(Words({{"type", "WhitespaceSplit"}}, " a  b\tc\u00a0d\u2003", {"a", "b", "c", "d"}),
              ElementsAre("a", "b", "c", "d"));
}

TEST(PreTokenizers, Digits) {
  const std::vector<std::string> vocab = {"a", "b", "1", "2", "3", "12", "\u0663"};
  EXPECT_THAT(Words({{"type", "Digits"}, {"individual_digits", true}}, "a12b3", vocab),
              ElementsAre("a", "1", "2", "b", "3"));
  EXPECT_THAT(Words({{"type", "Digits"}, {"individual_digits", false}}, "a12b3", vocab),
              ElementsAre("a", "12", "b", "3"));
}

TEST(PreTokenizers, PunctuationIsolatedByDefault) {
  EXPECT_THAT(Words({{"type", "Punctuation"}}, "Hi! ok?.", {"Hi", "!", " ok", "?", "."}),
              ElementsAre("Hi", "!", " ok", "?", "."));
  EXPECT_THAT(Words({{"type", "Punctuation"}, {"behavior", "Removed"}}, "a+b", {"a", "b"}),
              ElementsAre("a", "b"));
}

TEST(PreTokenizers, MetaspacePrependSchemes) {
  const std::vector<std::string> vocab = {"\u2581Hello", "\u2581world", "Hello", "\u2581Hello\u2581world",
                                          "x",           "\u2581x"};
  nlohmann::json metaspace = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_THAT(Words(metaspace, "Hello world", vocab), ElementsAre("\u2581Hello", "\u2581world"));
  metaspace["prepend_scheme"] = "never";
  EXPECT_THAT(Words(metaspace, "Hello world", vocab), ElementsAre("Hello", "\u2581world"));
  metaspace["prepend_scheme"] = "always";
  metaspace["split"] = false;
  EXPECT_THAT(Words(metaspace, "Hello world", vocab), ElementsAre("\u2581Hello\u2581world"));
  metaspace["add_prefix_space"] = false;  // the older spelling of "never"
  metaspace.erase("prepend_scheme");
  EXPECT_THAT(Words(metaspace, "Hello", vocab), ElementsAre("Hello"));
}

TEST(PreTokenizers, MetaspaceFirstPrependsOnlyAtTheStartOfTheInput) {
  const nlohmann::json metaspace = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  const nlohmann::json added = {{{"id", 6}, {"content", "<s>"}, {"special", true}, {"normalized", false}}};
  const std::vector<std::string> vocab = {"\u2581Hello", "Hello", "x", "\u2581x", "\u2581y", "y"};
  EXPECT_THAT(Words(metaspace, "Hello<s>x", vocab, added), ElementsAre("\u2581Hello", "<s>", "x"));
  EXPECT_THAT(Words(metaspace, "<s>Hello", vocab, added), ElementsAre("<s>", "Hello"));
}

// Checked against tokenizers 0.23.2: a normalizer that deletes the first
// characters, or replaces more than one there, moves the piece's start off
// the input's start.
TEST(PreTokenizers, MetaspaceFirstAfterANormalizerMovedTheStart) {
  const nlohmann::json metaspace = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  const std::vector<std::string> vocab = {"hi",  "\u2581hi", "\u03c8llo", "\u2581\u03c8llo",
                                          "yhi", "\u2581yhi"};
  const auto words = [&](const nlohmann::json& normalizer, const std::string& text) {
    nlohmann::json root = TinyJson(vocab);
    root["normalizer"] = normalizer;
    root["pre_tokenizer"] = metaspace;
    return Tokens(*Build(root), text);
  };
  EXPECT_THAT(words({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, " hi"),
              ElementsAre("hi"));
  EXPECT_THAT(words({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, "hi"),
              ElementsAre("\u2581hi"));
  EXPECT_THAT(
      words({{"type", "Replace"}, {"pattern", {{"Regex", "(?i)he"}}}, {"content", "\u03c8"}}, "Hello"),
      ElementsAre("\u03c8llo"));
  EXPECT_THAT(words({{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "y"}}, "xhi"),
              ElementsAre("\u2581yhi"));
}

TEST(PreTokenizers, ByteLevelMapsBytesAndSplitsLikeGpt2) {
  const std::vector<std::string> vocab = {"\u0120Hello",  "\u0120world",  "Hello",   "a\u0120b",
                                          "\u0120\u0120", "\u00c3\u00a9", "\u0120's"};
  EXPECT_THAT(
      Words({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}, "Hello world", vocab),
      ElementsAre("\u0120Hello", "\u0120world"));
  EXPECT_THAT(
      Words({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}, "Hello world", vocab),
      ElementsAre("Hello", "\u0120world"));
  EXPECT_THAT(Words({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "a b", vocab),
              ElementsAre("a\u0120b"));
  // é is two bytes, each its own character.
  EXPECT_THAT(
      Words({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "\u00e9", vocab),
      ElementsAre("\u00c3\u00a9"));
}

TEST(PreTokenizers, SequenceRunsInOrder) {
  const nlohmann::json sequence = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_THAT(Words(sequence, "ab12 c", {"ab", "1", "2", "c"}), ElementsAre("ab", "1", "2", "c"));
}

}  // namespace
}  // namespace kiln::models
