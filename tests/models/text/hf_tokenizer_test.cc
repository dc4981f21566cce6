#include "models/text/hf_tokenizer.h"

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Ids;
using ::kiln::models::testing::Tokens;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string FixturePath(const std::string& name) {
  return absl::StrCat(KILN_SHARED_DIR, "/fixtures/tokenizers/", name, "/tokenizer.json");
}

// Loading the 9-11 MB fixtures takes a while; each test binary does it once.
const HfTokenizer& Fixture(const std::string& name) {
  static auto* const llama3 = HfTokenizer::Load(FixturePath("llama3"))->release();
  static auto* const qwen3 = HfTokenizer::Load(FixturePath("qwen3"))->release();
  return name == "llama3" ? *llama3 : *qwen3;
}

// Texts of the kinds the references hold, for checks that need no reference:
// decoding what was encoded gives the text back.
const std::vector<std::string>& RoundTripTexts() {
  static const auto* const texts = new std::vector<std::string>{
      "Hello world",
      "",
      " ",
      "   leading spaces",
      "trailing spaces   ",
      "tabs\tand\nnewlines\r\n\r\nend\n",
      "def square(x):\n    return x ** 2  # the square\n\n\nprint(square(12))\n",
      "3.14159 and 1234567890123 and 1,000,000 and 0x1F",
      "日本語のテキストと中文文本，还有标点。",
      "emoji: 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖",
      "I'm sure they're here, we've seen it; I'LL GO. You'd've known.",
      "\u00a0non-breaking and\u2003em space\u200b zero width \u0085 nel",
      std::string(300, 'a'),
  };
  return *texts;
}

TEST(HfTokenizer, LoadsTheLlama3Fixture) {
  const HfTokenizer& t = Fixture("llama3");
  EXPECT_EQ(t.vocab_size(), 128256);
  EXPECT_EQ(t.TokenId("<|begin_of_text|>"), 128000);
  EXPECT_EQ(t.TokenId("<|eot_id|>"), 128009);
  EXPECT_EQ(t.TokenText(128009), "<|eot_id|>");
  EXPECT_TRUE(t.IsSpecial(128009));
  EXPECT_FALSE(t.IsSpecial(9906));
  EXPECT_EQ(t.TokenText(9906), "Hello");
  EXPECT_EQ(t.TokenText(-1), "");
  EXPECT_EQ(t.TokenText(128256), "");
  EXPECT_EQ(t.TokenId("no such token"), -1);
  EXPECT_THAT(t.Describe(), HasSubstr("128256"));
}

TEST(HfTokenizer, LoadsTheQwen3Fixture) {
  const HfTokenizer& t = Fixture("qwen3");
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.TokenId("<|im_start|>"), 151644);
  EXPECT_TRUE(t.IsSpecial(151644));
  EXPECT_EQ(t.TokenId("<think>"), 151667);
  EXPECT_FALSE(t.IsSpecial(151667));  // an added token that is not special
}

TEST(HfTokenizer, EncodesWellKnownIds) {
  // Ids every Llama 3 and Qwen2+ user has seen.
  EXPECT_THAT(Ids(Fixture("llama3"), "Hello world"), ElementsAre(9906, 1917));
  EXPECT_THAT(Ids(Fixture("qwen3"), "Hello world"), ElementsAre(9707, 1879));
  EXPECT_THAT(Ids(Fixture("llama3"), ""), IsEmpty());
}

TEST(HfTokenizer, Llama3SplitsDigitsInThrees) {
  EXPECT_THAT(Tokens(Fixture("llama3"), "1234567"), ElementsAre("123", "456", "7"));
  EXPECT_THAT(Tokens(Fixture("qwen3"), "1234"), ElementsAre("1", "2", "3", "4"));
}

TEST(HfTokenizer, SpecialTokensInTheTextAreMatched) {
  const HfTokenizer& t = Fixture("llama3");
  const std::vector<int32_t> ids = Ids(t, "a<|eot_id|>b");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], 128009);
}

TEST(HfTokenizer, WithoutParseSpecialTheTextOfASpecialTokenIsPlainText) {
  const HfTokenizer& t = Fixture("llama3");
  const std::vector<int32_t> ids = Ids(t, "<|eot_id|>", true, /*parse_special=*/false);
  EXPECT_GT(ids.size(), 1u);
  for (const int32_t id : ids) EXPECT_LT(id, 128000);
  EXPECT_EQ(*t.Decode(ids), "<|eot_id|>");
}

TEST(HfTokenizer, WithoutParseSpecialNonSpecialAddedTokensStillMatch) {
  const HfTokenizer& t = Fixture("qwen3");
  const std::vector<int32_t> ids = Ids(t, "<|im_start|><think>", true, /*parse_special=*/false);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.back(), 151667);
  EXPECT_NE(ids.front(), 151644);
}

TEST(HfTokenizer, QwenNormalizesToNfcFirst) {
  const HfTokenizer& t = Fixture("qwen3");
  EXPECT_EQ(Ids(t, "Cafe\u0301"), Ids(t, "Caf\u00e9"));
  EXPECT_NE(Ids(Fixture("llama3"), "Cafe\u0301"), Ids(Fixture("llama3"), "Caf\u00e9"));
}

TEST(HfTokenizer, DecodesWhatItEncodes) {
  for (const char* name : {"llama3", "qwen3"}) {
    const HfTokenizer& t = Fixture(name);
    for (const std::string& text : RoundTripTexts()) {
      EXPECT_EQ(*t.Decode(Ids(t, text)), text) << name << ": " << text;
    }
  }
}

TEST(HfTokenizer, SkipSpecialTokensDropsOnlySpecialOnes) {
  const HfTokenizer& t = Fixture("qwen3");
  const std::vector<int32_t> ids = Ids(t, "<|im_start|>user\n<think>x</think><|im_end|>");
  EXPECT_EQ(*t.Decode(ids, false), "<|im_start|>user\n<think>x</think><|im_end|>");
  EXPECT_EQ(*t.Decode(ids, true), "user\n<think>x</think>");
}

TEST(HfTokenizer, ByteLevelTokensCanStopInsideACharacter) {
  const HfTokenizer& t = Fixture("llama3");
  const std::vector<int32_t> ids = Ids(t, "🤖");
  ASSERT_GT(ids.size(), 1u);  // four bytes, not one token
  const std::string head = *t.DecodeBytes({ids.data(), ids.size() - 1}, false);
  EXPECT_LT(head.size(), 4u);
  EXPECT_EQ(head, std::string("🤖").substr(0, head.size()));
  EXPECT_EQ(*t.Decode({ids.data(), ids.size() - 1}), "\xEF\xBF\xBD");
}

TEST(HfTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const HfTokenizer& t = Fixture("llama3");
  for (const int32_t id : {-1, 128256, 1 << 30}) {
    absl::StatusOr<std::string> text = t.DecodeBytes({id}, false);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(text.status().message(), HasSubstr("outside the vocabulary"));
  }
}

TEST(HfTokenizer, EncodeRejectsInvalidUtf8) {
  absl::StatusOr<std::vector<int32_t>> ids = Fixture("llama3").Encode("ab\xFF", {});
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ids.status().message(), HasSubstr("not valid UTF-8"));
}

TEST(HfTokenizer, LongInputsEncodeQuickly) {
  // Runs of one character stress the regex (\s+(?!\S)) and the merge loop.
  const HfTokenizer& t = Fixture("llama3");
  for (const std::string& text : {std::string(200000, ' ') + "x", std::string(200000, 'a'),
                                  std::string(100000, '\n') + "a", std::string(60000, '9')}) {
    EXPECT_EQ(*t.Decode(Ids(t, text)), text);
  }
}

// ---------------------------------------------------------------- references

// tests/models/references/tokenizers.json, made by
// tests/models/references/make_references.py with tokenizers 0.23.2 and
// transformers 5.17.0 (its "generator" field): every tokenizer.json entry
// (the two fixtures and the tiny trained ones under models/) must give the
// same ids with and without special tokens, and the same decodes.
TEST(HfTokenizer, MatchesTheTokenizersLibraryReferences) {
  const std::string dir = absl::StrCat(KILN_SOURCE_DIR, "/tests/models/references");
  std::ifstream file(dir + "/tokenizers.json");
  if (!file) GTEST_SKIP() << dir << "/tokenizers.json is not there yet";
  const nlohmann::json refs = nlohmann::json::parse(file, nullptr, false);
  ASSERT_TRUE(refs.is_object());
  const nlohmann::json& texts = refs["texts"];
  int checked = 0;
  for (const auto& [name, entry] : refs["tokenizers"].items()) {
    const std::string path = entry["path"].get<std::string>();
    if (!absl::EndsWith(path, "tokenizer.json")) continue;  // SentencePiece entries are another test's
    const std::string full = absl::StartsWith(path, "fixtures/") ? absl::StrCat(KILN_SHARED_DIR, "/", path)
                                                                 : absl::StrCat(dir, "/", path);
    absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::Load(full);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i].get<std::string>();
      const nlohmann::json& want = entry["encode"][i];
      const std::vector<int32_t> with = Ids(**t, text, true), without = Ids(**t, text, false);
      EXPECT_EQ(with, want["with_special"].get<std::vector<int32_t>>())
          << name << " text " << i << ": " << text;
      EXPECT_EQ(without, want["without_special"].get<std::vector<int32_t>>()) << name << " text " << i;
      const std::vector<int32_t> ref_ids = want["with_special"].get<std::vector<int32_t>>();
      EXPECT_EQ(*(*t)->Decode(ref_ids, false), entry["decode"][i]["text"].get<std::string>())
          << name << " " << i;
      EXPECT_EQ(*(*t)->Decode(ref_ids, true), entry["decode"][i]["text_skip_special"].get<std::string>())
          << name << " " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5);  // llama3, qwen3 and the three tiny ones
}

// ---------------------------------------------------------------- loading

TEST(HfTokenizer, LoadNamesAMissingFile) {
  absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::Load("/nonexistent/tokenizer.json");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr("/nonexistent/tokenizer.json"));
}

TEST(HfTokenizer, LoadRejectsMalformedJson) {
  const std::string path = ::testing::TempDir() + "/kiln_hf_bad_tokenizer.json";
  std::ofstream(path) << "{\"model\": {";
  absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::Load(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("not well-formed JSON"));
  EXPECT_THAT(t.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace kiln::models
